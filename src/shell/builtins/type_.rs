//! `type [-t] name ...`: display what a name would run.

use std::sync::Arc;

use forkbox_commands::FileSystem;

use crate::registry::Registry;
use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// Reserved words, which `type` reports as keywords.
pub(crate) const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
];

/// What `name` resolves to: its kind (`alias`, `keyword`, `function`, `builtin`, `file`) and what
/// `command -v` prints for it.
pub(crate) fn describe(sh: &Shell, name: &str) -> Option<(&'static str, String)> {
    if (sh.interactive || sh.shopts.on("expand_aliases"))
        && let Some(value) = sh.aliases.get(name)
    {
        return Some((
            "alias",
            format!("alias {name}='{}'", value.replace('\'', "'\\''")),
        ));
    }
    if KEYWORDS.contains(&name) {
        return Some(("keyword", name.to_string()));
    }
    if sh.functions.contains_key(name) {
        return Some(("function", name.to_string()));
    }
    let entry = sh.registry.resolve(name)?;
    if name.contains('/') {
        return Some(("file", name.to_string()));
    }
    if sh.disabled_builtins.contains(name) {
        // `enable -n`: only a file of that name is left.
        return file_path(sh, name).map(|p| ("file", p));
    }
    // bash's own builtins that forkbox also has as files (`sh`, `bash`) are files there.
    match (entry.kind, entry.path()) {
        (forkbox_commands::CommandKind::Builtin, Some(_)) if matches!(name, "sh" | "bash") => {
            file_path(sh, name).map(|p| ("file", p))
        }
        (forkbox_commands::CommandKind::Builtin, _) => Some(("builtin", name.to_string())),
        _ if crate::registry::BASH_BUILTIN_COMMANDS.contains(&name) => {
            Some(("builtin", name.to_string()))
        }
        _ => file_path(sh, name).map(|p| ("file", p)),
    }
}

/// What `name` resolves to as [`describe`] says, or else an executable file of the fork
/// in a directory of PATH ([`fork_file`]): what running it would run. A registry command
/// is the fork's file when one comes first in PATH (`~/bin/wc`).
pub(crate) fn resolve(
    sh: &Shell,
    name: &str,
) -> impl std::future::Future<Output = Option<(&'static str, String)>> + Send + 'static + use<> {
    let found = describe(sh, name);
    let shadow = (matches!(found, Some(("file", _))) && !name.contains('/')).then(|| {
        let path = sh.get_str("PATH").unwrap_or_default();
        (sh.path_search(), path, name.to_string())
    });
    let file = (found.is_none() && !name.contains('/'))
        .then(|| fork_file(sh, name, &sh.get_str("PATH").unwrap_or_default()));
    let hashed = (found.is_none() && sh.opts.hashall)
        .then(|| {
            sh.hashed
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, p, _)| p.clone())
        })
        .flatten();
    // A name with a slash is the file it names, when that is an executable regular file.
    let at = (found.is_none() && name.contains('/')).then(|| {
        let full = forkbox_commands::fs::join(&sh.cwd, name);
        (sh.fs.clone(), full, name.to_string())
    });
    async move {
        if let Some((search, path, name)) = shadow
            && let InPath::File(f) = search.find(&name, &path).await
        {
            return Some(("file", f));
        }
        match (found, file, at) {
            (Some(d), _, _) => Some(d),
            // A name only `hash -p` gave a path is that path.
            (None, Some(_), _) if hashed.is_some() => hashed.map(|p| ("file", p)),
            (None, Some(file), _) => file.await.filter(|(_, x)| *x).map(|(p, _)| ("file", p)),
            (None, None, Some((fs, full, name))) => match fs.stat(&full).await {
                Ok(m) if m.is_file() && m.mode & 0o111 != 0 => Some(("file", name)),
                _ => None,
            },
            (None, None, None) => None,
        }
    }
}

/// The first executable regular file named `name` of the fork in a directory of `path`
/// (`~/bin`, `./node_modules/.bin`), as PATH's directory names it, with `true`; failing
/// that, the first regular file of that name, with `false` (bash then tries to run it and
/// is refused). The directories where the registry's commands are files are not
/// searched: with the default PATH nothing is looked up in the fork.
pub(crate) fn fork_file(
    sh: &Shell,
    name: &str,
    path: &str,
) -> impl std::future::Future<Output = Option<(String, bool)>> + Send + 'static + use<> {
    let search = PathSearch {
        registry: None,
        fs: sh.fs.clone(),
        cwd: sh.cwd.clone(),
    };
    let (name, path) = (name.to_string(), path.to_string());
    async move {
        match search.find(&name, &path).await {
            InPath::File(f) => Some((f, true)),
            InPath::Refused(f) => Some((f, false)),
            InPath::Command | InPath::Missing => None,
        }
    }
}

/// Where a search of PATH leads a command name (see [`PathSearch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InPath {
    /// The registry's command: a directory where the registry's commands are files came
    /// first.
    Command,
    /// An executable regular file of the fork, as PATH's directory names it.
    File(String),
    /// No executable, but a regular file of that name without execute permission (bash
    /// and execvp are then refused).
    Refused(String),
    /// Nothing of that name.
    Missing,
}

/// The one search of PATH, as bash and execvp do it: the directories in order, the
/// first executable regular file wins. In a directory where the registry's commands are
/// files (`/usr/bin`, `/bin`) a registered command is found; elsewhere the fork's files
/// are looked at. The shell searches with it, and so do the programs that run others
/// (`env`, `xargs`, `find -exec`, `timeout`) through their launcher.
pub(crate) struct PathSearch {
    /// The registry whose commands are files; `None` skips the directories that hold
    /// them (only the fork is searched).
    pub registry: Option<Arc<Registry>>,
    pub fs: Arc<dyn FileSystem>,
    /// The working directory relative entries (and an empty one) are taken from.
    pub cwd: String,
}

impl PathSearch {
    pub(crate) async fn find(&self, name: &str, path: &str) -> InPath {
        let mut refused = None;
        for dir in path.split(':') {
            if command_dir(&self.cwd, dir.trim_end_matches('/')) {
                match &self.registry {
                    Some(r) if r.resolve(name).and_then(|e| e.path()).is_some() => {
                        return InPath::Command;
                    }
                    _ => continue,
                }
            }
            match self.file_in(dir, name).await {
                Some((shown, true)) => return InPath::File(shown),
                Some((shown, false)) if refused.is_none() => refused = Some(shown),
                _ => {}
            }
        }
        refused.map_or(InPath::Missing, InPath::Refused)
    }

    /// Every executable file named `name` in `path`, in its order (`type -a`): the
    /// registry's command in each directory that holds them, the fork's files elsewhere.
    pub(crate) async fn find_all(&self, name: &str, path: &str) -> Vec<String> {
        let mut out = Vec::new();
        if name.contains('/') {
            return out;
        }
        let command = self
            .registry
            .as_ref()
            .is_some_and(|r| r.resolve(name).and_then(|e| e.path()).is_some());
        for dir in path.split(':') {
            let dir_name = dir.trim_end_matches('/');
            if command_dir(&self.cwd, dir_name) {
                if command {
                    out.push(format!("{dir_name}/{name}"));
                }
            } else if let Some((shown, true)) = self.file_in(dir, name).await {
                out.push(shown);
            }
        }
        out
    }

    /// The regular file `name` of the fork in PATH's directory `dir`, as the directory
    /// names it, with whether it may be executed.
    async fn file_in(&self, dir: &str, name: &str) -> Option<(String, bool)> {
        let shown = match dir {
            "" => format!("./{name}"),
            d if d.ends_with('/') => format!("{d}{name}"),
            d => format!("{d}/{name}"),
        };
        let full = forkbox_commands::fs::join(&self.cwd, &shown);
        match self.fs.stat(&full).await {
            Ok(m) if m.is_file() => Some((shown, m.mode & 0o111 != 0)),
            _ => None,
        }
    }
}

/// The file a name is, found in PATH as bash's hash lookup would (a command forkbox
/// registers is a file of `/usr/bin`, which a Debian system also reaches as `/bin`).
pub(crate) fn file_path(sh: &Shell, name: &str) -> Option<String> {
    if name.contains('/') {
        return sh.registry.resolve(name).map(|_| name.to_string());
    }
    file_paths(sh, name).into_iter().next()
}

/// Every path in PATH at which `name` is a file, in PATH's order.
fn file_paths(sh: &Shell, name: &str) -> Vec<String> {
    file_paths_in(sh, name, &sh.get_str("PATH").unwrap_or_default())
}

/// Every path in `path` (a value of PATH) at which `name` is a file, in its order.
pub(crate) fn file_paths_in(sh: &Shell, name: &str, path: &str) -> Vec<String> {
    if sh.registry.resolve(name).and_then(|e| e.path()).is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for dir in path.split(':') {
        let dir = dir.trim_end_matches('/');
        if is_command_dir(sh, dir) {
            out.push(format!("{dir}/{name}"));
        }
    }
    out
}

/// Whether PATH's directory `dir` holds the registry's commands: `/usr/bin`, and `/bin`
/// that reaches it on a Debian system (however spelled: `/usr//bin`, or relative to the
/// working directory, as an empty entry is).
fn is_command_dir(sh: &Shell, dir: &str) -> bool {
    command_dir(&sh.cwd, dir)
}

/// [`is_command_dir`] from working directory `cwd`.
pub(crate) fn command_dir(cwd: &str, dir: &str) -> bool {
    let full = forkbox_commands::fs::normalize(&forkbox_commands::fs::join(cwd, dir));
    matches!(full.as_str(), "/usr/bin" | "/bin")
}

/// What `type -a NAME` prints: the alias, keyword, function and builtin it is, then each
/// file of that name in PATH.
fn all_meanings(
    sh: &Shell,
    name: &str,
    no_functions: bool,
    files: Vec<String>,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if (sh.interactive || sh.shopts.on("expand_aliases"))
        && let Some(value) = sh.aliases.get(name)
    {
        out.push(("alias", format!("{name} is aliased to `{value}'")));
    }
    if KEYWORDS.contains(&name) {
        out.push(("keyword", format!("{name} is a shell keyword")));
    }
    if !no_functions && let Some(f) = sh.functions.get(name) {
        let body = crate::shell::printer::function(name, f);
        out.push(("function", format!("{name} is a function\n{body}")));
    }
    if name.contains('/') {
        if sh.registry.resolve(name).is_some() {
            out.push(("file", name.to_string()));
        }
        return out;
    }
    let builtin = (sh.registry.resolve(name).is_some_and(|e| {
        e.kind == forkbox_commands::CommandKind::Builtin && !matches!(name, "sh" | "bash")
    }) || crate::registry::BASH_BUILTIN_COMMANDS.contains(&name))
        && !sh.disabled_builtins.contains(name);
    if builtin {
        out.push(("builtin", format!("{name} is a shell builtin")));
    }
    for p in files {
        out.push(("file", p));
    }
    out
}

pub(crate) fn sentence(name: &str, kind: &str, path: &str) -> String {
    match kind {
        "keyword" => format!("{name} is a shell keyword"),
        "function" => format!("{name} is a function"),
        "builtin" => format!("{name} is a shell builtin"),
        _ => format!("{name} is {path}"),
    }
}

/// What `type NAME` and `command -V NAME` say: the sentence, and for a function its
/// definition as bash prints it.
pub(crate) fn verbose(sh: &Shell, name: &str, kind: &str, path: &str) -> String {
    if let (true, Some(value)) = (kind == "alias", sh.aliases.get(name)) {
        return format!("{name} is aliased to `{value}'");
    }
    // A command the hash table holds is named by it (`type -a` lists PATH instead).
    if kind == "file"
        && !name.contains('/')
        && sh.opts.hashall
        && let Some((_, hashed, _)) = sh.hashed.iter().find(|(n, _, _)| n == name)
    {
        return format!("{name} is hashed ({hashed})");
    }
    match (kind == "function", sh.functions.get(name)) {
        (true, Some(f)) => format!(
            "{}\n{}",
            sentence(name, kind, path),
            crate::shell::printer::function(name, f)
        ),
        // In POSIX mode bash names the special builtins so.
        _ if kind == "builtin" && sh.opts.posix && crate::shell::exec::is_special_builtin(name) => {
            format!("{name} is a special shell builtin")
        }
        _ => sentence(name, kind, path),
    }
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut kind_only = false;
    // `-p`: only a file's path; `-P`: only a path, whatever else the name is.
    let mut path_only = false;
    let mut path_search = false;
    let mut no_functions = false;
    // `-a`: every meaning of the name, each file in every directory of PATH.
    let mut all = false;
    let mut names = Vec::new();
    let mut options = true;
    for a in &args {
        if options && a == "--" {
            options = false;
            continue;
        }
        if options && a == "--help" {
            let _ = io.stdout().write_str("type: type [-afptP] name [name ...]\n    Display information about command type.\n").await;
            return Ok(0);
        }
        match a.strip_prefix('-') {
            Some(letters) if options && !letters.is_empty() => {
                for c in letters.chars() {
                    match c {
                        't' => kind_only = true,
                        'p' => path_only = true,
                        'P' => path_search = true,
                        'f' => no_functions = true,
                        'a' => all = true,
                        _ => {
                            let msg = format!(
                                "type: -{c}: invalid option\ntype: usage: type [-afptP] name [name ...]"
                            );
                            return super::fail(sh, io, msg, 2).await;
                        }
                    }
                }
            }
            _ => {
                options = false;
                names.push(a.clone());
            }
        }
    }
    let mut status = 0;
    for n in &names {
        let found = if no_functions && sh.functions.contains_key(n) {
            let saved = sh.functions.remove(n);
            let d = resolve(sh, n).await;
            if let Some(f) = saved {
                sh.functions.insert(n.clone(), f);
            }
            d
        } else {
            resolve(sh, n).await
        };
        if path_search {
            // A search of PATH only: whatever else the name is, the file it names.
            let path = match &found {
                Some(("file", path)) => Some(path.clone()),
                _ => file_path(sh, n),
            };
            match path {
                Some(path) => {
                    let _ = io.stdout().write_str(&format!("{path}\n")).await;
                }
                None => status = 1,
            }
            continue;
        }
        if all {
            // Every meaning, in the order bash looks: as sentences, kinds (`-t`) or the
            // files' paths (`-p`).
            let path = sh.get_str("PATH").unwrap_or_default();
            let files = sh.path_search().find_all(n, &path).await;
            let meanings = all_meanings(sh, n, no_functions, files);
            if meanings.is_empty() {
                if !kind_only && !path_only {
                    super::fail(sh, io, format!("type: {n}: not found"), 1).await?;
                }
                status = 1;
                continue;
            }
            let mut text = String::new();
            for (kind, what) in meanings {
                if kind_only {
                    text.push_str(kind);
                } else if path_only {
                    if kind != "file" {
                        continue;
                    }
                    text.push_str(&what);
                } else if kind == "file" {
                    text.push_str(&format!("{n} is {what}"));
                } else {
                    text.push_str(&what);
                }
                text.push('\n');
            }
            let _ = io.stdout().write_str(&text).await;
            continue;
        }
        match found {
            Some((kind, path)) => {
                let line = if kind_only {
                    kind.to_string()
                } else if path_only {
                    if kind != "file" {
                        continue;
                    }
                    path
                } else {
                    verbose(sh, n, kind, &path)
                };
                let _ = io.stdout().write_str(&format!("{line}\n")).await;
            }
            None => {
                if !kind_only && !path_only {
                    super::fail(sh, io, format!("type: {n}: not found"), 1).await?;
                }
                status = 1;
            }
        }
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn type_kinds() {
        let script = "f() { :; }; alias al=x; type -t f echo ls if al nope; echo $?";
        let expected = (
            0,
            "function\nbuiltin\nfile\nkeyword\n1\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn type_describes() {
        let script = "f() { echo; }; type echo if; type f";
        let expected = (0, "echo is a shell builtin\nif is a shell keyword\nf is a function\nf () \n{ \n    echo\n}\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn type_not_found() {
        let script = "type nope; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: type: nope: not found\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

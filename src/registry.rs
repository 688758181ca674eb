//! The command registry: the one place a command name is resolved.
//!
//! A name resolves to a shell builtin (implemented by the interpreter, because it reads or
//! changes shell state or is too hot to leave it), a native command (`forkbox-commands`)
//! or, later, a WASI tool, in that order: the first registration of a name wins, so a name
//! has exactly one implementation. Everything that runs or describes a command by name
//! asks [`Registry::resolve`]: the interpreter, launchers (`env`, `xargs`), `type`,
//! `command -v`, `which`, `help` and `#!` lines. Shell functions come before all of it
//! and are the interpreter's own. The registry is immutable after start-up and shared by
//! every session.

use std::collections::BTreeMap;
use std::sync::Arc;

use forkbox_commands::{Command, CommandInfo, CommandKind};

/// Every shell builtin with its one-line summary (the interpreter implements each).
pub const BUILTINS: &[(&str, &str)] = &[
    (".", "execute commands from a file in the current shell"),
    (":", "do nothing, successfully"),
    ("alias", "define or display aliases"),
    (
        "bash",
        "run a shell script or command string in a new shell",
    ),
    ("bg", "no job control: say so"),
    ("bind", "no line editing in a script: say so"),
    ("break", "exit for, while, or until loops"),
    ("builtin", "execute a shell builtin, bypassing functions"),
    ("caller", "return the context of the current function call"),
    ("cd", "change the shell working directory"),
    (
        "command",
        "run a command bypassing shell functions, or describe it",
    ),
    ("compgen", "display possible completions"),
    ("complete", "specify how arguments are to be completed"),
    ("compopt", "modify completion options"),
    ("continue", "resume the next iteration of a loop"),
    ("declare", "set variable values and attributes"),
    ("dirs", "display the directory stack"),
    ("disown", "remove jobs from the job table"),
    ("echo", "write arguments to standard output"),
    ("enable", "list shell builtins"),
    ("eval", "execute arguments as a shell command"),
    ("exec", "replace the shell with the given command"),
    ("exit", "exit the shell"),
    ("export", "set export attribute for shell variables"),
    ("false", "return an unsuccessful result"),
    ("fc", "list the command history (fc -l)"),
    ("fg", "no job control: say so"),
    ("getopts", "parse option arguments"),
    (
        "hash",
        "remember command locations (nothing to remember here)",
    ),
    ("history", "display or change the command history"),
    ("jobs", "list background jobs"),
    ("kill", "send a signal to a job or shell of the session"),
    ("ps", "list the session's shell and background jobs"),
    ("let", "evaluate arithmetic expressions"),
    ("local", "define local variables"),
    ("logout", "exit a login shell"),
    (
        "mapfile",
        "read lines from the standard input into an indexed array variable",
    ),
    ("popd", "remove directories from the stack"),
    ("pushd", "add directories to the stack"),
    ("pwd", "print the name of the current working directory"),
    (
        "read",
        "read a line from standard input and split it into fields",
    ),
    ("readarray", "read lines from a file into an array variable"),
    ("readonly", "mark shell variables as unchangeable"),
    ("return", "return from a shell function"),
    (
        "set",
        "set or unset shell options and positional parameters",
    ),
    ("sh", "run a shell script or command string in a new shell"),
    ("shift", "shift positional parameters"),
    ("suspend", "no job control: say so"),
    ("shopt", "set and unset shell options"),
    (
        "snapshot",
        "take a snapshot of this session's files, or list snapshots",
    ),
    (
        "source",
        "execute commands from a file in the current shell",
    ),
    ("trap", "run commands on signals and shell events"),
    ("times", "show the shell's process times"),
    ("true", "return a successful result"),
    ("type", "display information about command type"),
    ("typeset", "set variable values and attributes"),
    (
        "ulimit",
        "show and set resource limits (recorded, not enforced)",
    ),
    ("umask", "display the file mode creation mask"),
    ("unalias", "remove alias definitions"),
    (
        "unset",
        "unset values and attributes of shell variables and functions",
    ),
    ("wait", "wait for background jobs to finish"),
];

/// bash 5.2's builtins, in the order `enable` lists them.
pub const BASH_BUILTIN_NAMES: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// bash's builtins that forkbox implements as native commands: `type`, `command -v` and
/// `builtin` treat them as the builtins they are in bash.
pub const BASH_BUILTIN_COMMANDS: &[&str] = &["[", "help", "printf", "test"];

/// Builtins that a Debian system also has as files in `/usr/bin` (so `which` and
/// `type -a` name the file).
const ALSO_FILES: &[&str] = &["bash", "echo", "false", "kill", "pwd", "sh", "true"];

/// Directories whose files are the registry's commands (`/usr/bin/cat` is `cat`).
const BIN_DIRS: &[&str] = &[
    "/usr/local/bin/",
    "/usr/bin/",
    "/bin/",
    "/usr/sbin/",
    "/sbin/",
];

/// One name the registry resolves.
#[derive(Clone)]
pub struct Entry {
    pub name: String,
    pub kind: CommandKind,
    pub summary: String,
    /// The implementation of a native or WASI entry; builtins run in the interpreter.
    pub command: Option<Arc<dyn Command>>,
}

impl Entry {
    /// The file this command is as `which` names it, if it is one.
    pub fn path(&self) -> Option<String> {
        (self.kind != CommandKind::Builtin || ALSO_FILES.contains(&self.name.as_str()))
            .then(|| format!("/usr/bin/{}", self.name))
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// Every command a session can run by name.
#[derive(Clone, Default)]
pub struct Registry {
    /// Sorted by name so listings are deterministic.
    entries: BTreeMap<String, Entry>,
    /// Programs whose file behaves unlike the shell's command of that name (GNU's
    /// `printf` program beside bash's builtin): what [`Registry::resolve_program`] and a
    /// path give.
    programs: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("entries", &self.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The shell builtins, then the native commands of `forkbox-commands`.
    pub fn with_native() -> Registry {
        let mut r = Registry::new();
        r.register_builtins();
        for c in forkbox_commands::all() {
            r.register_command(c, CommandKind::Native);
        }
        for c in forkbox_commands::programs() {
            r.register_program(c);
        }
        r
    }

    /// Registers what the file of a command's name runs when that differs from the
    /// command the shell runs by the name.
    pub fn register_program(&mut self, command: Arc<dyn Command>) {
        let name = command.name().to_string();
        self.programs.insert(
            name.clone(),
            Entry {
                name,
                kind: CommandKind::Native,
                summary: command.summary().to_string(),
                command: Some(command),
            },
        );
    }

    /// What running `name` as a program runs (`env NAME`, `xargs NAME`, `find -exec
    /// NAME`): the program where it differs from the shell's command, else
    /// [`Registry::resolve`]'s.
    pub fn resolve_program(&self, name: &str) -> Option<&Entry> {
        let base = if name.contains('/') {
            BIN_DIRS.iter().find_map(|d| name.strip_prefix(d))
        } else {
            Some(name)
        };
        if let Some(p) = base.and_then(|b| self.programs.get(b))
            && self.entries.contains_key(&p.name)
        {
            return Some(p);
        }
        self.resolve(name)
    }

    /// Registers every shell builtin of [`BUILTINS`].
    pub fn register_builtins(&mut self) {
        for (name, summary) in BUILTINS {
            self.register(Entry {
                name: name.to_string(),
                kind: CommandKind::Builtin,
                summary: summary.to_string(),
                command: None,
            });
        }
    }

    /// Registers a native command or tool under its own name.
    pub fn register_command(&mut self, command: Arc<dyn Command>, kind: CommandKind) -> bool {
        self.register(Entry {
            name: command.name().to_string(),
            kind,
            summary: command.summary().to_string(),
            command: Some(command),
        })
    }

    /// Registers `entry` unless its name is taken: the first registration wins. Gives
    /// whether it was registered.
    pub fn register(&mut self, entry: Entry) -> bool {
        if self.entries.contains_key(&entry.name) {
            tracing::debug!(name = %entry.name, "name already registered; later registration ignored");
            return false;
        }
        self.entries.insert(entry.name.clone(), entry);
        true
    }

    /// What `name` runs: a plain name, or the path of a command's file (`/usr/bin/cat`,
    /// `/bin/sh`). `None` for anything else (a script of the fork, or nothing).
    pub fn resolve(&self, name: &str) -> Option<&Entry> {
        if !name.contains('/') {
            return self.entries.get(name);
        }
        let base = BIN_DIRS.iter().find_map(|d| name.strip_prefix(d))?;
        let entry = self.entries.get(base)?;
        entry.path()?;
        Some(self.programs.get(base).unwrap_or(entry))
    }

    /// The implementation of a native or WASI command named `name`.
    pub fn command(&self, name: &str) -> Option<Arc<dyn Command>> {
        self.resolve(name)?.command.clone()
    }

    /// Every entry, sorted by name, for `help`, `which` and completion.
    pub fn infos(&self) -> Vec<CommandInfo> {
        self.entries
            .values()
            .map(|e| CommandInfo {
                name: e.name.clone(),
                summary: e.summary.clone(),
                kind: e.kind,
                path: e.path(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use forkbox_commands::{CmdResult, Context};

    struct Fake(&'static str, &'static str);

    #[async_trait]
    impl Command for Fake {
        fn name(&self) -> &'static str {
            self.0
        }
        fn summary(&self) -> &'static str {
            self.1
        }
        async fn run(&self, _ctx: &Context, _args: Vec<String>) -> CmdResult {
            Ok(0)
        }
    }

    #[test]
    fn first_registration_wins() {
        let mut r = Registry::new();
        r.register_builtins();
        assert!(!r.register_command(Arc::new(Fake("echo", "native")), CommandKind::Native));
        assert!(r.register_command(Arc::new(Fake("zz", "one")), CommandKind::Native));
        assert!(!r.register_command(Arc::new(Fake("zz", "two")), CommandKind::Wasi));
        let echo = r.resolve("echo").unwrap();
        assert_eq!(echo.kind, CommandKind::Builtin);
        assert!(echo.command.is_none());
        assert_eq!(r.resolve("zz").unwrap().summary, "one");
        assert_eq!(r.resolve("zz").unwrap().kind, CommandKind::Native);
    }

    #[test]
    fn paths_resolve_to_files_only() {
        let r = Registry::with_native();
        assert_eq!(r.resolve("/usr/bin/cat").unwrap().name, "cat");
        assert_eq!(r.resolve("/bin/sh").unwrap().name, "sh");
        assert_eq!(r.resolve("/bin/true").unwrap().kind, CommandKind::Builtin);
        // /bin/echo is GNU's program, which differs from the builtin (`--help`).
        assert_eq!(r.resolve("/bin/echo").unwrap().kind, CommandKind::Native);
        // No /usr/bin/cd on the system forkbox imitates.
        assert!(r.resolve("/usr/bin/cd").is_none());
        assert!(r.resolve("./cat").is_none());
        assert!(r.resolve("/home/cat").is_none());
        assert!(r.resolve("nope").is_none());
    }

    #[test]
    fn infos_are_sorted_with_kinds_and_paths() {
        let r = Registry::with_native();
        let infos = r.infos();
        let names: Vec<&str> = infos.iter().map(|i| i.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        let cd = infos.iter().find(|i| i.name == "cd").unwrap();
        assert_eq!((cd.kind, cd.path.as_deref()), (CommandKind::Builtin, None));
        let cat = infos.iter().find(|i| i.name == "cat").unwrap();
        assert_eq!(
            (cat.kind, cat.path.as_deref()),
            (CommandKind::Native, Some("/usr/bin/cat"))
        );
    }

    #[test]
    fn programs_differ_from_the_shells_command_of_their_name() {
        let r = Registry::with_native();
        let shell = r.resolve("printf").unwrap().command.clone().unwrap();
        let program = r
            .resolve_program("printf")
            .unwrap()
            .command
            .clone()
            .unwrap();
        assert_eq!(shell.summary(), "format and print data");
        assert_ne!(program.summary(), shell.summary());
        let by_path = r
            .resolve("/usr/bin/printf")
            .unwrap()
            .command
            .clone()
            .unwrap();
        assert_eq!(by_path.summary(), program.summary());
        // Everything else is what resolve gives.
        assert_eq!(r.resolve_program("cat").unwrap().name, "cat");
        assert_eq!(r.resolve_program("cd").unwrap().kind, CommandKind::Builtin);
        // GNU's echo and pwd are programs of their own too (`env echo --help`).
        for name in ["echo", "pwd"] {
            assert_eq!(
                r.resolve_program(name).unwrap().kind,
                CommandKind::Native,
                "{name}"
            );
        }
        assert!(r.resolve_program("nonesuch").is_none());
    }
}

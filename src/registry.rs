//! The command registry: name → native command (or, later, WASI tool).
//!
//! The shell resolves a command name as function, then builtin, then registry entry.
//! The registry itself is immutable after start-up and shared by every session.

use std::collections::BTreeMap;
use std::sync::Arc;

use forkbox_commands::{Command, CommandInfo};

/// Every command a session can launch by name, other than shell builtins and functions.
#[derive(Clone, Default)]
pub struct Registry {
    /// Sorted by name so `infos` and `help` list deterministically.
    commands: BTreeMap<String, Arc<dyn Command>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("commands", &self.commands.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Registry {
    /// A registry of exactly these commands; a later duplicate name replaces an earlier one.
    pub fn new(commands: Vec<Arc<dyn Command>>) -> Registry {
        let commands = commands
            .into_iter()
            .map(|c| (c.name().to_string(), c))
            .collect();
        Registry { commands }
    }

    /// The native commands of the `forkbox-commands` crate.
    pub fn with_native() -> Registry {
        Registry::new(forkbox_commands::all())
    }

    /// Adds (or replaces) one command, e.g. a WASI tool.
    pub fn insert(&mut self, command: Arc<dyn Command>) {
        self.commands.insert(command.name().to_string(), command);
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Command>> {
        self.commands.get(name).cloned()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.commands.contains_key(name)
    }

    /// Name and summary of every command, sorted by name.
    pub fn infos(&self) -> Vec<CommandInfo> {
        self.commands
            .values()
            .map(|c| CommandInfo {
                name: c.name().to_string(),
                summary: c.summary().to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use forkbox_commands::{CmdResult, Context};

    struct Fake(&'static str);

    #[async_trait]
    impl Command for Fake {
        fn name(&self) -> &'static str {
            self.0
        }
        fn summary(&self) -> &'static str {
            "fake"
        }
        async fn run(&self, _ctx: &Context, _args: Vec<String>) -> CmdResult {
            Ok(0)
        }
    }

    #[test]
    fn infos_are_sorted_and_get_finds() {
        let r = Registry::new(vec![Arc::new(Fake("zz")), Arc::new(Fake("aa"))]);
        let names: Vec<_> = r.infos().into_iter().map(|i| i.name).collect();
        assert_eq!(names, ["aa", "zz"]);
        assert!(r.get("aa").is_some());
        assert!(r.get("nope").is_none());
    }
}

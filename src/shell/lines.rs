//! Where the running command came from: `LINENO`, the call stack behind `FUNCNAME`,
//! `BASH_LINENO`, `BASH_SOURCE`, `BASH_ARGV`, `BASH_ARGC` and `caller`, and the read-time order that decides which
//! aliases a command sees.
//!
//! bash numbers lines while it reads; forkbox parses first, so each parse's line numbers
//! are shifted by a base: 0 for the script and a sourced file (their own lines), the line
//! of the command for an `eval` string, an alias expansion or a command substitution
//! (whose first line is that line). A simple command's line is the line at which bash's
//! parser made it, one token after its first word: the end of its second word, or of its
//! first when that is all there is.
//!
//! bash also reads a script one complete command (a line, or a compound command that
//! spans lines) at a time, and replaces aliases while it reads. forkbox replaces them
//! when a command runs, so each complete command gets a read number ("unit"), a
//! function body keeps the unit it was defined in, and an alias is in effect for a
//! command only if it was defined in an earlier unit.

use std::collections::HashMap;

use brush_parser::ast::{CommandPrefixOrSuffixItem, SimpleCommand};

/// What bash shows as the source of code read from the `-c` string when a function
/// defined there is on the stack (bash 5.2 names it so, and its messages too:
/// `environment: line 1: nosuch: command not found`).
pub(crate) const TOP_SOURCE: &str = "environment";

/// The same for code read from the standard input (`printf 'f(){ x; }; f' | bash`).
pub(crate) const STDIN_SOURCE: &str = "main";

/// Where a function was defined: what its commands' lines and aliases are relative to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origin {
    pub line_base: usize,
    /// The file it was read from (`BASH_SOURCE`), [`TOP_SOURCE`] for the script.
    pub source: String,
    /// The read unit of its definition (aliases defined later are not seen in it).
    pub unit: u64,
    /// The aliases its body was read with, when some were defined then: bash replaces
    /// aliases as it reads, so the body keeps them even after `unalias` (empty when
    /// `expand_aliases` was off).
    pub aliases: Option<std::sync::Arc<crate::shell::builtins::alias::Aliases>>,
}

/// One frame of the call stack (a function or a sourced file), innermost last.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    /// The line it was called from (`BASH_LINENO`).
    pub call_line: usize,
    /// The file it was defined in (`BASH_SOURCE`).
    pub source: String,
    /// Its arguments, kept for `BASH_ARGV`/`BASH_ARGC` when `extdebug` was on at the call.
    pub argv: Option<Vec<String>>,
}

/// The shell's record of lines, sources and read order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lines {
    /// `LINENO`: the line of the simple command running.
    pub lineno: usize,
    /// Set by `unset LINENO`: it is an ordinary variable from then on, as in bash.
    pub lineno_unset: bool,
    /// Set by `unset FUNCNAME`: bash no longer keeps it as the call stack's names.
    pub funcname_unset: bool,
    /// The `eval`, `source` (as called: `source` or `.`), `mapfile` callback or alias
    /// text being read, innermost last, with the call depth it runs at.
    pub inputs: Vec<(String, usize)>,
    /// Added to the parser's line numbers of the input running now.
    pub line_base: usize,
    /// The file being read now, "" for the script itself.
    pub source: String,
    /// Whether the script itself is read from the standard input (no `-c` string).
    pub stdin: bool,
    /// The read unit of the command running now.
    pub unit: u64,
    /// The last unit handed out.
    pub units: u64,
    /// Per function name: where it was defined.
    pub functions: HashMap<String, Origin>,
    /// The frames behind `FUNCNAME`, outermost first (parallel to `Shell::funcnames`).
    pub frames: Vec<Frame>,
    /// The script's arguments at the bottom of `BASH_ARGV`/`BASH_ARGC`, from the first
    /// call made with `extdebug` on (bash keeps them from then on).
    pub main_argv: Option<Vec<String>>,
    /// While a function runs: the aliases its body was read with (see [`Origin`]).
    pub read_aliases: Option<std::sync::Arc<crate::shell::builtins::alias::Aliases>>,
    /// Per alias name: the unit that defined it.
    pub aliases: HashMap<String, u64>,
    /// Per alias name redefined or removed: the value it had before and the unit that
    /// changed it. The rest of that unit was read with the old value, as bash reads.
    pub earlier_aliases: HashMap<String, (String, u64)>,
    /// `local -`: the `set` options to restore when the function at that call depth
    /// returns.
    pub local_opts: Vec<(usize, crate::shell::Options)>,
}

impl Lines {
    /// Starts the next complete command read from the input.
    pub(crate) fn next_unit(&mut self) {
        self.units += 1;
        self.unit = self.units;
    }

    /// Where a function defined now comes from.
    pub(crate) fn origin_here(&self) -> Origin {
        Origin {
            line_base: self.line_base,
            source: if self.source.is_empty() {
                self.top_source().to_string()
            } else {
                self.source.clone()
            },
            unit: self.unit,
            aliases: None,
        }
    }

    /// `BASH_SOURCE` of a function defined in the script itself.
    pub(crate) fn top_source(&self) -> &'static str {
        if self.stdin { STDIN_SOURCE } else { TOP_SOURCE }
    }

    /// The name bash gives the input in a syntax error: the file being read, `-c` for
    /// the command string, none for the standard input.
    pub(crate) fn input_name(&self) -> Option<&str> {
        if !self.source.is_empty() {
            Some(&self.source)
        } else if self.stdin {
            None
        } else {
            Some("-c")
        }
    }

    /// Whether alias `name`, if defined, is one the command running now was read after.
    pub(crate) fn alias_visible(&self, name: &str) -> bool {
        self.aliases.get(name).is_none_or(|u| *u < self.unit)
    }

    /// The value alias `name` had when the command running now was read, if the unit
    /// running now has since redefined or removed it.
    pub(crate) fn alias_before(&self, name: &str) -> Option<&String> {
        self.earlier_aliases
            .get(name)
            .filter(|(_, u)| *u == self.unit)
            .map(|(v, _)| v)
    }

    /// Alias `name` is being redefined or removed; `old` is its value until now.
    pub(crate) fn alias_changed(&mut self, name: &str, old: Option<String>) {
        // Only the first change in a unit counts: the line was read before all of them.
        if self.alias_before(name).is_some() {
            return;
        }
        match old.filter(|_| self.alias_visible(name)) {
            Some(v) => {
                self.earlier_aliases
                    .insert(name.to_string(), (v, self.unit));
            }
            None => {
                self.earlier_aliases.remove(name);
            }
        }
    }
}

impl crate::shell::Shell {
    /// Whether `name` is one of the arrays made from the call stack.
    pub(crate) fn is_stack_array(name: &str) -> bool {
        matches!(
            name,
            "FUNCNAME" | "BASH_LINENO" | "BASH_SOURCE" | "BASH_ARGV" | "BASH_ARGC"
        )
    }

    /// The arguments a function call keeps for `BASH_ARGV` (`None` unless `extdebug` is
    /// on); the first such call also keeps the script's.
    pub(crate) fn frame_argv(&mut self, args: &[String]) -> Option<Vec<String>> {
        if !self.shopts.on("extdebug") {
            return None;
        }
        if self.lines.main_argv.is_none() {
            let main = if self.call_depth == 0 {
                self.positional.clone()
            } else {
                Vec::new()
            };
            self.lines.main_argv = Some(main);
        }
        Some(args.to_vec())
    }

    /// `FUNCNAME`, `BASH_LINENO` or `BASH_SOURCE`, innermost frame first.
    pub(crate) fn stack_array(&self, name: &str) -> Vec<String> {
        match name {
            // Only while a function runs (a sourced file's frame shows inside one).
            "FUNCNAME" if self.call_depth == 0 || self.lines.funcname_unset => Vec::new(),
            "FUNCNAME" => self.funcnames.iter().rev().cloned().collect(),
            "BASH_LINENO" => self
                .lines
                .frames
                .iter()
                .rev()
                .map(|f| f.call_line.to_string())
                .collect(),
            "BASH_SOURCE" => self
                .lines
                .frames
                .iter()
                .rev()
                .map(|f| f.source.clone())
                .collect(),
            // Innermost call first; each call's arguments last to first.
            "BASH_ARGV" | "BASH_ARGC" => {
                let frames = self
                    .lines
                    .frames
                    .iter()
                    .rev()
                    .filter_map(|f| f.argv.as_ref())
                    .chain(self.lines.main_argv.as_ref());
                if name == "BASH_ARGC" {
                    frames.map(|a| a.len().to_string()).collect()
                } else {
                    frames.flat_map(|a| a.iter().rev().cloned()).collect()
                }
            }
            _ => Vec::new(),
        }
    }
}

/// The line of `sc` in its parse (see the module header), 0 when unknown.
/// The line a redirection's target word ends on, when it has one.
fn redirect_line(r: &brush_parser::ast::IoRedirect) -> Option<usize> {
    use brush_parser::ast::{IoFileRedirectTarget, IoRedirect};
    let w = match r {
        IoRedirect::File(
            _,
            _,
            IoFileRedirectTarget::Filename(w) | IoFileRedirectTarget::Duplicate(w),
        )
        | IoRedirect::HereString(_, w) => w,
        _ => return None,
    };
    w.loc.as_ref().map(|l| l.end.line)
}

pub(crate) fn simple_line(sc: &SimpleCommand) -> usize {
    let items = sc
        .prefix
        .iter()
        .flat_map(|p| p.0.iter())
        .map(Some)
        .chain(std::iter::once(None))
        .chain(sc.suffix.iter().flat_map(|s| s.0.iter()).map(Some));
    let end_line = |w: &brush_parser::ast::Word| w.loc.as_ref().map(|l| l.end.line);
    let mut first: Option<usize> = None;
    let mut seen = 0;
    for item in items {
        let line = match item {
            None => match &sc.word_or_name {
                Some(w) => end_line(w),
                None => continue,
            },
            Some(CommandPrefixOrSuffixItem::Word(w))
            | Some(CommandPrefixOrSuffixItem::AssignmentWord(_, w)) => end_line(w),
            // A redirection before anything else (`>out cmd`): its target's line.
            Some(CommandPrefixOrSuffixItem::IoRedirect(r)) if seen == 0 && first.is_none() => {
                first = redirect_line(r);
                continue;
            }
            // Redirections carry no position: the line so far stands.
            Some(_) => return first.unwrap_or(0),
        };
        seen += 1;
        match (seen, line) {
            (1, l) => first = l,
            (_, Some(l)) => return l,
            (_, None) => return first.unwrap_or(0),
        }
    }
    first.unwrap_or(0)
}

/// `set -v` for a text run as one parsed program (the `-c` string, an `eval` string, a
/// sourced file). bash shows the input as it reads it, one complete command (a line, or
/// the lines of a compound command) at a time, each read after the one before ran, so a
/// line shows when `-v` is on as it is read; forkbox parses the whole text first, so the
/// lines are shown before the command they belong to runs. The text is split into those
/// units only once something must be shown.
pub(crate) struct ReadEcho<'a> {
    text: &'a str,
    /// Per unit: where it ends in the text and how many complete commands the units up
    /// to it hold. Empty when the units do not add up to the program's commands (nothing
    /// is shown then); `None` until needed.
    units: Option<Vec<(usize, usize)>>,
}

impl<'a> ReadEcho<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        ReadEcho { text, units: None }
    }

    /// The lines read before complete command `i` of `total` runs (with `i == total`,
    /// the lines after the last one), newline-terminated; empty when there are none.
    pub(crate) fn before(&mut self, i: usize, total: usize) -> String {
        let text = self.text;
        let units = self.units.get_or_insert_with(|| {
            let read = crate::shell::parse::read_units(text);
            let mut commands = 0;
            let units: Vec<(usize, usize)> = read
                .read
                .iter()
                .map(|(p, range)| {
                    commands += p.complete_commands.len();
                    (range.end, commands)
                })
                .collect();
            if read.stop.is_some() || commands != total {
                return Vec::new();
            }
            units
        });
        // Where the unit holding complete command `c` ends.
        let end_of = |c: usize| units.iter().find(|u| u.1 > c).map(|u| u.0);
        let from = match i.checked_sub(1) {
            None => Some(0),
            Some(c) => end_of(c),
        };
        let to = if i >= total {
            Some(text.len())
        } else {
            end_of(i)
        };
        let (Some(from), Some(to)) = (from, to) else {
            return String::new();
        };
        let mut shown = text.get(from..to).unwrap_or_default().to_string();
        if !shown.is_empty() && !shown.ends_with('\n') {
            shown.push('\n');
        }
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of(text: &str, n: usize) -> usize {
        let p = crate::shell::parse_program(text).expect("parses");
        let mut lines = Vec::new();
        for cc in &p.complete_commands {
            for item in &cc.0 {
                for c in &item.0.first.seq {
                    if let brush_parser::ast::Command::Simple(sc) = c {
                        lines.push(simple_line(sc));
                    }
                }
            }
        }
        lines[n]
    }

    #[test]
    fn a_command_is_on_the_line_of_its_second_word() {
        assert_eq!(line_of("echo a\necho b", 1), 2);
        assert_eq!(line_of("echo \"a\nb\" c", 0), 2);
        assert_eq!(line_of("echo x \"a\nb\"", 0), 1);
        assert_eq!(line_of("\n\nls", 0), 3);
        assert_eq!(line_of("x=1\ny=2 z=3", 1), 2);
    }

    #[test]
    fn aliases_are_seen_from_the_next_unit() {
        let mut l = Lines::default();
        l.next_unit();
        l.aliases.insert("a".into(), l.unit);
        assert!(!l.alias_visible("a"));
        l.next_unit();
        assert!(l.alias_visible("a"));
        assert!(l.alias_visible("never-defined"));
    }
}

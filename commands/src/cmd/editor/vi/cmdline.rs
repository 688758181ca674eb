//! vi's last line: `/` and `?` searches and the `:` commands.

use super::super::Effect;
use super::super::buffer::unit_before;
use super::super::keys::Key;
use super::{State, Vi};

impl Vi {
    pub(super) fn search(&mut self, pat: &[u8], forward: bool) {
        match self.buf.find(pat, forward) {
            Some(((row, col), wrapped)) => {
                self.buf.row = row;
                self.buf.col = col;
                if wrapped {
                    self.error(if forward {
                        "search hit BOTTOM, continuing at TOP"
                    } else {
                        "search hit TOP, continuing at BOTTOM"
                    });
                } else {
                    let c = if forward { '/' } else { '?' };
                    self.info(format!("{c}{}", String::from_utf8_lossy(pat)));
                }
            }
            None => self.error(format!(
                "E486: Pattern not found: {}",
                String::from_utf8_lossy(pat)
            )),
        }
    }

    /// Runs a `:` command line.
    pub(super) fn ex(&mut self, line: &[u8]) -> Effect {
        let text = String::from_utf8_lossy(line).into_owned();
        let cmd = text.trim();
        if cmd.is_empty() {
            return Effect::None;
        }
        if let Ok(n) = cmd.parse::<usize>() {
            self.buf.row = n.saturating_sub(1).min(self.buf.len() - 1);
            self.first_non_blank();
            return Effect::None;
        }
        if cmd == "$" {
            self.buf.row = self.buf.len() - 1;
            self.first_non_blank();
            return Effect::None;
        }
        let (word, arg) = match cmd.find(' ') {
            Some(i) => (&cmd[..i], cmd[i..].trim()),
            None => (cmd, ""),
        };
        let target = if arg.is_empty() {
            self.name.clone()
        } else {
            Some(arg.to_string())
        };
        match word {
            "q" | "quit" => {
                if self.buf.modified {
                    self.error("E37: No write since last change (add ! to override)");
                    return Effect::None;
                }
                Effect::Quit
            }
            "q!" | "quit!" | "qa!" | "cq" => Effect::Quit,
            "w" | "write" | "w!" | "wq" | "wq!" | "x" | "xit" | "x!" => {
                let quits = !word.starts_with('w') || word.starts_with("wq");
                if word.starts_with('x') && !self.buf.modified && arg.is_empty() {
                    return Effect::Quit;
                }
                match target {
                    Some(path) => Effect::Save {
                        path,
                        then_quit: quits,
                    },
                    None => {
                        self.error("E32: No file name");
                        Effect::None
                    }
                }
            }
            _ => {
                self.error(format!("E492: Not an editor command: {cmd}"));
                Effect::None
            }
        }
    }

    pub(super) fn line_key(&mut self, key: Key) -> Effect {
        let (mut input, search) = match std::mem::replace(&mut self.state, State::Normal) {
            State::Command(i) => (i, None),
            State::Search(fwd, i) => (i, Some(fwd)),
            other => {
                self.state = other;
                return Effect::None;
            }
        };
        let keep = |input: Vec<u8>| match search {
            Some(fwd) => State::Search(fwd, input),
            None => State::Command(input),
        };
        match key {
            Key::Text(t) => {
                input.extend_from_slice(&t);
                self.state = keep(input);
            }
            Key::Backspace => {
                if input.is_empty() {
                    return Effect::None;
                }
                let at = unit_before(&input, input.len());
                input.truncate(at);
                self.state = keep(input);
            }
            Key::Esc | Key::Ctrl(b'c') => {}
            Key::Enter => match search {
                None => return self.ex(&input),
                Some(fwd) => {
                    let pat = if input.is_empty() {
                        match &self.last_search {
                            Some((p, _)) => p.clone(),
                            None => {
                                self.error("E35: No previous regular expression");
                                return Effect::None;
                            }
                        }
                    } else {
                        input
                    };
                    self.last_search = Some((pat.clone(), fwd));
                    self.search(&pat, fwd);
                    self.clamp();
                }
            },
            _ => self.state = keep(input),
        }
        Effect::None
    }
}

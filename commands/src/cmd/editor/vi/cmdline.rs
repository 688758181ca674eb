//! vi's last line: `/` and `?` searches and the `:` commands.

use crate::gnu_regex;

use super::super::Effect;
use super::super::buffer::unit_before;
use super::super::keys::Key;
use super::{State, Vi};

impl Vi {
    /// `/pat` or `?pat`: `pat` is a regular expression in vim's default ("magic")
    /// syntax, matched by GNU's engine; a bad one is reported, never searched.
    pub(super) fn search(&mut self, pat: &[u8], forward: bool) {
        let (bre, icase) = vim_to_bre(pat);
        let flags = gnu_regex::Flags {
            icase,
            ..gnu_regex::Flags::default()
        };
        let re = match gnu_regex::compile(&bre, gnu_regex::Dialect::Basic, flags) {
            Ok(re) => re,
            Err(e) => {
                self.error(format!(
                    "E383: Invalid search string: {} ({})",
                    String::from_utf8_lossy(pat),
                    e.msg
                ));
                return;
            }
        };
        let found = match self.buf.find_regex(&re, forward) {
            Ok(found) => found,
            Err(_) => {
                self.error("E363: pattern uses more memory than 'maxmempattern'");
                return;
            }
        };
        match found {
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

/// A vim "magic" pattern as a GNU basic regular expression, and whether `\c` asked to
/// ignore case. What the two share (`.`, `*`, `[…]`, `^`, `$`, `\(\)`, `\|`, `\+`,
/// `\?`, `\<`, `\>`, `\w`) passes through; vim's own `\=`, `\{n,m}`, `\d`,
/// `\s`, `\a`, `\l`, `\u`, `\x`, `\t` and `\/` are spelled the GNU way.
pub(crate) fn vim_to_bre(pat: &[u8]) -> (String, bool) {
    let text = String::from_utf8_lossy(pat);
    let cs: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(cs.len() + 8);
    let mut icase = false;
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c == '[' {
            // A bracket expression goes through as it is, up to its `]`.
            let mut j = i + 1;
            if cs.get(j) == Some(&'^') {
                j += 1;
            }
            if cs.get(j) == Some(&']') {
                j += 1;
            }
            while j < cs.len() && cs[j] != ']' {
                j += 1;
            }
            if j < cs.len() {
                out.extend(&cs[i..=j]);
                i = j + 1;
            } else {
                // No `]`: vim takes the `[` literally.
                out.push_str("\\[");
                i += 1;
            }
            continue;
        }
        if c != '\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let Some(&n) = cs.get(i + 1) else {
            out.push_str("\\\\");
            break;
        };
        i += 2;
        match n {
            '=' => out.push_str("\\?"),
            '{' => {
                // `\{n,m}` (or `\{n,m\}`); vim's lazy `\{-n,m}` matches greedily here.
                out.push_str("\\{");
                if cs.get(i) == Some(&'-') {
                    i += 1;
                }
                while let Some(&d) = cs.get(i) {
                    if d == '}' || d == '\\' {
                        break;
                    }
                    out.push(d);
                    i += 1;
                }
                if cs.get(i) == Some(&'\\') {
                    i += 1;
                }
                if cs.get(i) == Some(&'}') {
                    i += 1;
                }
                out.push_str("\\}");
            }
            'd' => out.push_str("[0-9]"),
            'D' => out.push_str("[^0-9]"),
            's' => out.push_str("[ \t]"),
            'S' => out.push_str("[^ \t]"),
            'a' => out.push_str("[A-Za-z]"),
            'A' => out.push_str("[^A-Za-z]"),
            'l' => out.push_str("[a-z]"),
            'L' => out.push_str("[^a-z]"),
            'u' => out.push_str("[A-Z]"),
            'U' => out.push_str("[^A-Z]"),
            'x' => out.push_str("[0-9A-Fa-f]"),
            'X' => out.push_str("[^0-9A-Fa-f]"),
            't' => out.push('\t'),
            'c' => icase = true,
            'C' => {}
            '/' | '?' => out.push(n),
            _ => {
                out.push('\\');
                out.push(n);
            }
        }
    }
    (out, icase)
}

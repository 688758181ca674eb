//! `select NAME [in WORDS]; do LIST; done`: a numbered menu on stderr, a line read from
//! stdin into `REPLY`, NAME set to the word chosen ("" for anything else), LIST run, until
//! `break` or the end of input.
//!
//! brush-parser has no `select`, so the parser reads it as a `for` loop whose variable is
//! marked (see `parse::select_as_for`); the menu follows bash's layout (`print_select_list`:
//! columns for an 80-column terminal, or `$COLUMNS`, padded with tabs of 8), and, as in bash
//! built with ksh-compatible select, the menu is shown again only after an empty line.

use super::*;

/// The prefix the `for` variable of a `select` carries (see `parse::select_as_for`).
pub(crate) const SELECT_MARK: &str = "__forkbox_select_";

/// `)` and a blank after each index, as bash prints them.
const RP_SPACE: usize = 2;

/// Tab stops of the terminal the menu is laid out for.
const TAB: usize = 8;

fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Pads from column `from` to column `to` with tabs and blanks, as bash's `indent`.
fn indent(out: &mut String, mut from: usize, to: usize) {
    while from < to {
        if to / TAB > from / TAB {
            out.push('\t');
            from += TAB - from % TAB;
        } else {
            out.push(' ');
            from += 1;
        }
    }
}

/// The menu of `words` for a terminal `columns` wide.
pub(crate) fn menu(words: &[String], columns: usize) -> String {
    let n = words.len();
    let mut out = String::new();
    if n == 0 {
        out.push('\n');
        return out;
    }
    let longest = words.iter().map(|w| w.chars().count()).max().unwrap_or(0);
    let index_len = digits(n);
    let width = longest + index_len + RP_SPACE + 2;
    let cols = (columns / width).max(1);
    let mut rows = n.div_ceil(cols);
    if rows == 1 {
        // Everything fits on one line: bash then lists it in one column instead.
        rows = n.div_ceil(rows);
    }
    let first_len = digits(rows);
    for row in 0..rows {
        let mut i = row;
        let mut pos = 0;
        loop {
            let len = if pos == 0 { first_len } else { index_len };
            let word = &words[i];
            out.push_str(&format!("{:>len$}) {word}", i + 1));
            let used = word.chars().count() + len + RP_SPACE;
            i += rows;
            if i >= n {
                break;
            }
            indent(&mut out, pos + used, pos + width);
            pos += width;
        }
        out.push('\n');
    }
    out
}

impl Shell {
    pub(super) async fn exec_select(
        &mut self,
        f: &ast::ForClauseCommand,
        name: &str,
        fds: &Fds,
    ) -> Exec<i32> {
        let words = match &f.values {
            None => self.positional.clone(),
            Some(words) => {
                let ws: Vec<&ast::Word> = words
                    .iter()
                    .filter(|w| w.value != crate::shell::parse::rewrite::EMPTY_IN)
                    .collect();
                match self.expand_words(&ws, fds).await {
                    Ok(v) => v,
                    Err(e) => return self.fail(e, fds).await,
                }
            }
        };
        if words.is_empty() {
            return Ok(0);
        }
        let columns = self
            .get_str("COLUMNS")
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|c| *c > 0)
            .unwrap_or(80);
        self.debug_header(
            || {
                let list = match &f.values {
                    Some(words) => words
                        .iter()
                        .map(|w| w.value.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    None => "\"$@\"".to_string(),
                };
                format!("select {name} in {list}")
            },
            fds,
        )
        .await?;
        let mut status = 0;
        let mut show_menu = true;
        self.loop_depth += 1;
        let mut out = Ok(());
        loop {
            if let Err(fl) = self.loop_tick().await {
                out = Err(fl);
                break;
            }
            let prompt = self.get_str("PS3").unwrap_or_else(|| "#? ".to_string());
            let mut chosen = None;
            loop {
                let mut shown = String::new();
                if show_menu {
                    shown.push_str(&menu(&words, columns));
                }
                shown.push_str(&prompt);
                let _ = fds.stderr().write_str(&shown).await;
                let line = match fds.stdin().read_line(crate::shell::MAX_LINE).await {
                    Ok(Some(l)) => l,
                    _ => Vec::new(),
                };
                let mut reply = forkbox_commands::bytetext::decode_slice(&line).into_owned();
                let complete = reply.ends_with('\n');
                if complete {
                    reply.pop();
                }
                // As `read` does: what was read before the end of input (nothing, or a
                // last line without its newline) is REPLY all the same.
                if let Err(e) = self.set_var("REPLY", &reply) {
                    self.loop_depth -= 1;
                    return self.fail(e, fds).await;
                }
                if !complete {
                    // The end of input ends the menu on a new line, and the loop fails.
                    let _ = fds.stdout().write_str("\n").await;
                    break;
                }
                if reply.is_empty() {
                    show_menu = true;
                    continue;
                }
                let word = reply
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| k.checked_sub(1))
                    .and_then(|k| words.get(k))
                    .cloned()
                    .unwrap_or_default();
                chosen = Some(word);
                break;
            }
            let Some(word) = chosen else {
                status = 1;
                break;
            };
            if let Err(e) = self.set_var(name, &word) {
                self.loop_depth -= 1;
                return self.fail(e, fds).await;
            }
            let r = self.exec_list(&f.body.list, fds).await;
            match loop_ctl(r, &mut status) {
                LoopCtl::Next => {}
                LoopCtl::Stop => break,
                LoopCtl::Out(fl) => {
                    out = Err(fl);
                    break;
                }
            }
            show_menu = self.get_str("REPLY").is_none_or(|r| r.is_empty());
        }
        self.loop_depth -= 1;
        out.map(|_| status)
    }
}

#[cfg(test)]
mod tests {
    use super::menu;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_short_menu_is_one_column() {
        assert_eq!(menu(&words(&["a", "b", "c"]), 80), "1) a\n2) b\n3) c\n");
    }

    #[test]
    fn a_long_menu_is_laid_out_in_columns_like_bash() {
        let w = words(&[
            "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
            "lambda", "mu",
        ]);
        assert_eq!(
            menu(&w, 80),
            "1) alpha      3) gamma\t   5) epsilon   7) eta\t     9) iota\t 11) lambda\n\
             2) beta\t      4) delta\t   6) zeta      8) theta    10) kappa\t 12) mu\n"
        );
    }
}

//! `umask [-p] [-S] [mode]`: the file mode creation mask, octal or symbolic.
//!
//! The mask is kept in the shell and reported as bash does; files the shell and native
//! commands create still get their modes from the filesystem port (0644/0755).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

/// The mask bash starts with.
pub(crate) const DEFAULT_UMASK: u32 = 0o022;

fn symbolic(mask: u32) -> String {
    let perm = !mask & 0o777;
    let part = |shift: u32| {
        let p = (perm >> shift) & 7;
        let mut s = String::new();
        for (bit, c) in [(4, 'r'), (2, 'w'), (1, 'x')] {
            if p & bit != 0 {
                s.push(c);
            }
        }
        s
    };
    format!("u={},g={},o={}", part(6), part(3), part(0))
}

/// Applies a symbolic mode (`u=rwx,g+w`) to `mask`; the error names the bad character.
/// What a bad character of a symbolic mode was read as: an `operator` where one was due
/// (after the who letters), a permission `character` after it.
type BadMode = (String, &'static str);

fn apply_symbolic(mask: u32, mode: &str) -> Result<u32, BadMode> {
    let mut perm = !mask & 0o777;
    // Read as bash's `symbolic_umask` reads it: clauses of who letters, an operator and
    // permission letters, each ended by `,` or the end; the end reads as a NUL byte
    // (`u=r,` has no operator after its comma).
    let mut chars = mode.chars().peekable();
    loop {
        let mut who = 0u32;
        while let Some(&c) = chars.peek() {
            who |= match c {
                'u' => 0o700,
                'g' => 0o070,
                'o' => 0o007,
                'a' => 0o777,
                _ => break,
            };
            chars.next();
        }
        if who == 0 {
            who = 0o777;
        }
        let op = chars.next().unwrap_or('\0');
        if !matches!(op, '+' | '-' | '=') {
            return Err((op.to_string(), "operator"));
        }
        let mut bits = 0u32;
        while let Some(&c) = chars.peek() {
            bits |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                _ => break,
            };
            chars.next();
        }
        let bits = bits & who;
        let end = chars.next();
        if let Some(other) = end.filter(|&c| c != ',') {
            return Err((other.to_string(), "character"));
        }
        perm = match op {
            '+' => perm | bits,
            '-' => perm & !bits,
            _ => (perm & !who) | bits,
        };
        if end.is_none() {
            break;
        }
    }
    Ok(!perm & 0o777)
}

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let (mut print, mut sym) = (false, false);
    let mut rest: &[String] = &args;
    while let Some(a) = rest.first() {
        if a == "--" {
            rest = &rest[1..];
            break;
        }
        if !a.starts_with('-') || a.len() < 2 || !a[1..].chars().all(|c| c == 'p' || c == 'S') {
            if a.starts_with('-')
                && a.len() > 1
                && !a[1..].starts_with(|c: char| c.is_ascii_digit())
            {
                let msg =
                    format!("umask: {a}: invalid option\numask: usage: umask [-p] [-S] [mode]");
                return super::fail(sh, io, msg, 2).await;
            }
            break;
        }
        print |= a.contains('p');
        sym |= a.contains('S');
        rest = &rest[1..];
    }
    let Some(mode) = rest.first() else {
        let shown = if sym {
            symbolic(sh.umask)
        } else {
            format!("{:04o}", sh.umask)
        };
        let line = if print {
            format!("umask {}{shown}\n", if sym { "-S " } else { "" })
        } else {
            format!("{shown}\n")
        };
        let _ = io.stdout().write_str(&line).await;
        return Ok(0);
    };
    if mode.starts_with(|c: char| c.is_ascii_digit()) {
        match u32::from_str_radix(mode, 8) {
            Ok(m) if m <= 0o7777 => sh.umask = m & 0o777,
            _ => {
                return super::fail(
                    sh,
                    io,
                    format!("umask: {mode}: octal number out of range"),
                    1,
                )
                .await;
            }
        }
    } else {
        match apply_symbolic(sh.umask, mode) {
            Ok(m) => sh.umask = m,
            Err((c, what)) => {
                let msg = format!("umask: `{c}': invalid symbolic mode {what}");
                return super::fail(sh, io, msg, 1).await;
            }
        }
    }
    if sym {
        let _ = io
            .stdout()
            .write_str(&format!("{}\n", symbolic(sh.umask)))
            .await;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_modes() {
        assert_eq!(symbolic(0o022), "u=rwx,g=rx,o=rx");
        assert_eq!(apply_symbolic(0o022, "u=rwx,g=rx,o="), Ok(0o027));
        assert_eq!(apply_symbolic(0o027, "g+w"), Ok(0o007));
        assert_eq!(apply_symbolic(0o077, "a=rwx"), Ok(0));
        assert_eq!(apply_symbolic(0o022, "u+z"), Err(("z".into(), "character")));
        assert_eq!(apply_symbolic(0o022, "q=r"), Err(("q".into(), "operator")));
    }

    #[test]
    fn symbolic_clauses_are_read_in_order() {
        // A comma with no clause after it meets the end (NUL) or another comma where
        // the operator is due; a clause may have no permissions at all.
        assert_eq!(apply_symbolic(0o022, ","), Err((",".into(), "operator")));
        assert_eq!(
            apply_symbolic(0o022, "u=r,"),
            Err(("\0".into(), "operator"))
        );
        assert_eq!(
            apply_symbolic(0o022, "u=r,,g=w"),
            Err((",".into(), "operator"))
        );
        assert_eq!(apply_symbolic(0o022, "u"), Err(("\0".into(), "operator")));
        assert_eq!(apply_symbolic(0o022, "u+"), Ok(0o022));
        assert_eq!(apply_symbolic(0o022, "="), Ok(0o777));
        assert_eq!(apply_symbolic(0o022, "a=r,+w"), Ok(0o111));
        assert_eq!(
            apply_symbolic(0o022, "g-w+x"),
            Err(("+".into(), "character"))
        );
    }
}

#[cfg(test)]
mod script_tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn umask_set_and_show() {
        let script = "umask 027; umask; umask -S; umask -p";
        let expected = (
            0,
            "0027\nu=rwx,g=rx,o=\numask 0027\n".to_string(),
            "".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn umask_symbolic() {
        let script = "umask 022; umask g-r,o=; umask";
        let expected = (0, "0067\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn umask_bad_octal() {
        let script = "umask 9; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: umask: 9: octal number out of range\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }
}

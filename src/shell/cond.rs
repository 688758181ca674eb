//! `[[ … ]]`: the extended test command.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use brush_parser::ast::{BinaryPredicate, ExtendedTestExpr, UnaryPredicate};
use forkbox_commands::{bytetext, fs};

use super::error::ShellError;
use super::pattern::Pattern;
use super::redirect::Fds;
use super::{Shell, Value};

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl Shell {
    pub(crate) fn eval_ext_test<'a>(
        &'a mut self,
        e: &'a ExtendedTestExpr,
        fds: &'a Fds,
    ) -> BoxFut<'a, Result<bool, ShellError>> {
        self.eval_ext_test_in(e, "", fds)
    }

    /// One step of `[[ … ]]`; `not` is `"! "` for a test right under a `!`, which
    /// `set -x` shows with it (`+ [[ ! -z x ]]`).
    fn eval_ext_test_in<'a>(
        &'a mut self,
        e: &'a ExtendedTestExpr,
        not: &'static str,
        fds: &'a Fds,
    ) -> BoxFut<'a, Result<bool, ShellError>> {
        super::grow(Box::pin(async move {
            match e {
                ExtendedTestExpr::And(a, b) => {
                    Ok(self.eval_ext_test(a, fds).await? && self.eval_ext_test(b, fds).await?)
                }
                ExtendedTestExpr::Or(a, b) => {
                    Ok(self.eval_ext_test(a, fds).await? || self.eval_ext_test(b, fds).await?)
                }
                ExtendedTestExpr::Not(a) => Ok(!self.eval_ext_test_in(a, "! ", fds).await?),
                ExtendedTestExpr::Parenthesized(a) => self.eval_ext_test(a, fds).await,
                ExtendedTestExpr::UnaryTest(pred, w) => {
                    let s = self.expand_no_split(w, fds).await?;
                    if self.opts.xtrace {
                        let line = format!("[[ {not}{pred} {} ]]", traced(&s));
                        self.trace_line(&line, fds).await;
                    }
                    self.unary_test(pred, &s, fds).await
                }
                ExtendedTestExpr::BinaryTest(pred, l, r) => {
                    let left = self.expand_no_split(l, fds).await?;
                    match pred {
                        BinaryPredicate::StringExactlyMatchesPattern
                        | BinaryPredicate::StringDoesNotExactlyMatchPattern => {
                            let pat = if self.opts.xtrace {
                                let (pat, shown) =
                                    self.expand_pattern_traced(&r.value, fds).await?;
                                let line = format!(
                                    "[[ {not}{} {pred} {} ]]",
                                    traced(&left),
                                    traced(&shown)
                                );
                                self.trace_line(&line, fds).await;
                                pat
                            } else {
                                self.expand_pattern(&r.value, fds).await?
                            };
                            let m = Pattern::with(&pat, true, self.shopts.on("nocasematch"))
                                .in_locale(!self.byte_locale())
                                .matches(&left);
                            Ok(m == matches!(pred, BinaryPredicate::StringExactlyMatchesPattern))
                        }
                        BinaryPredicate::StringMatchesRegex => {
                            let re = if self.opts.xtrace {
                                let (re, shown) = self.expand_regex_traced(&r.value, fds).await?;
                                let line = format!(
                                    "[[ {not}{} {pred} {} ]]",
                                    traced(&left),
                                    traced(&shown)
                                );
                                self.trace_line(&line, fds).await;
                                re
                            } else {
                                self.expand_pattern(&r.value, fds).await?
                            };
                            self.regex_test(&left, &re)
                        }
                        _ => {
                            let right = self.expand_no_split(r, fds).await?;
                            if self.opts.xtrace {
                                // `=~ "a.c"` (all quoted): bash shows the backslashes it
                                // puts before the regular expression's operators.
                                let shown =
                                    if matches!(pred, BinaryPredicate::StringContainsSubstring) {
                                        regex_quoted(&right)
                                    } else {
                                        right.clone()
                                    };
                                let line = format!(
                                    "[[ {not}{} {pred} {} ]]",
                                    traced(&left),
                                    traced(&shown)
                                );
                                self.trace_line(&line, fds).await;
                            }
                            self.binary_test(pred, &left, &right, fds).await
                        }
                    }
                }
            }
        }))
    }

    async fn unary_test(
        &mut self,
        pred: &UnaryPredicate,
        s: &str,
        fds: &Fds,
    ) -> Result<bool, ShellError> {
        use UnaryPredicate as U;
        let path = fs::join(&self.cwd, s);
        Ok(match pred {
            U::StringHasZeroLength => s.is_empty(),
            U::StringHasNonZeroLength => !s.is_empty(),
            U::FileExists => self.fs.stat(&path).await.is_ok(),
            U::FileExistsAndIsDir => self.fs.stat(&path).await.is_ok_and(|m| m.is_dir()),
            U::FileExistsAndIsRegularFile => self.fs.stat(&path).await.is_ok_and(|m| m.is_file()),
            U::FileExistsAndIsSymlink => self.fs.lstat(&path).await.is_ok_and(|m| m.is_symlink()),
            U::FileExistsAndIsNotZeroLength => self.fs.stat(&path).await.is_ok_and(|m| m.len > 0),
            U::FileExistsAndIsReadable => {
                self.fs.stat(&path).await.is_ok_and(|m| m.mode & 0o444 != 0)
            }
            U::FileExistsAndIsWritable => {
                self.fs.stat(&path).await.is_ok_and(|m| m.mode & 0o222 != 0)
            }
            U::FileExistsAndIsExecutable => {
                self.fs.stat(&path).await.is_ok_and(|m| m.mode & 0o111 != 0)
            }
            U::FileExistsAndOwnedByEffectiveUserId | U::FileExistsAndOwnedByEffectiveGroupId => {
                self.fs.stat(&path).await.is_ok()
            }
            U::FileExistsAndIsCharSpecialFile => self
                .fs
                .stat(&path)
                .await
                .is_ok_and(|m| m.kind == forkbox_commands::FileKind::CharDevice),
            U::FileExistsAndIsSetuid => self
                .fs
                .stat(&path)
                .await
                .is_ok_and(|m| m.mode & 0o4000 != 0),
            U::FileExistsAndIsSetgid => self
                .fs
                .stat(&path)
                .await
                .is_ok_and(|m| m.mode & 0o2000 != 0),
            U::FileExistsAndHasStickyBit => self
                .fs
                .stat(&path)
                .await
                .is_ok_and(|m| m.mode & 0o1000 != 0),
            U::FileExistsAndIsBlockSpecialFile
            | U::FileExistsAndIsFifo
            | U::FileExistsAndIsSocket
            | U::FileExistsAndModifiedSinceLastRead => false,
            U::FdIsOpenTerminal => s.trim() == "1" && fds.tty.is_some(),
            // Any `set -o` option (an unknown name is false).
            U::ShellOptionEnabled => self.option_value(s),
            U::ShellVariableIsSetAndAssigned => {
                if let Some(name) = self.negative_subscript_out_of_range(s) {
                    let e = ShellError::BadSubscript(name);
                    self.report(&fds.stderr(), &e).await;
                    return Ok(false);
                }
                self.var_is_set(s)
            }
            U::ShellVariableIsSetAndNameRef => self.vars.get(s).is_some_and(|v| v.attrs.nameref),
        })
    }

    /// For `-v 'a[-N]'`: the array's name when the negative index reaches before its
    /// first element (bash reports `a: bad array subscript`).
    pub(crate) fn negative_subscript_out_of_range(&self, s: &str) -> Option<String> {
        let (name, sub) = super::vars::split_subscript(s)?;
        let n: i64 = sub.trim().parse().ok().filter(|n| *n < 0)?;
        let target = self.resolve_ref(name);
        let len = match &self.vars.get(target.as_ref())?.value {
            Value::Array(a) => a.keys().next_back().map_or(0, |k| k + 1),
            Value::Str(_) => 1,
            Value::Assoc(_) => return None,
        };
        (len + n < 0).then(|| name.to_string())
    }

    pub(crate) fn var_is_set(&self, s: &str) -> bool {
        if let Some((name, sub)) = super::vars::split_subscript(s) {
            let target = self.resolve_ref(name);
            let var = self.vars.get(target.as_ref()).filter(|v| !v.attrs.unset);
            return match var.map(|v| &v.value) {
                Some(Value::Array(a)) if sub == "@" || sub == "*" => !a.is_empty(),
                // An associative array's `@` and `*` are keys like any other (bash 5.2).
                Some(Value::Assoc(a)) => a.contains_key(sub),
                Some(_) if sub == "@" || sub == "*" => true,
                Some(_) => self.get_subscript(&target, sub).is_some(),
                None => false,
            };
        }
        if let Ok(n) = s.parse::<usize>() {
            return n == 0 || n <= self.positional.len();
        }
        if s == "LINENO" && !self.lines.lineno_unset {
            return true;
        }
        // The variables the shell computes when read are set without being stored.
        if !self.vars.contains_key(s) {
            match s {
                n if super::vars::DYNAMIC_VARS.contains(&n) && !self.unspecial.contains(n) => {
                    return true;
                }
                // bash always has element 0 of these.
                "BASH_ARGV0" | "DIRSTACK" | "PIPESTATUS" | "BASH_ARGC" => return true,
                "FUNCNAME" | "BASH_SOURCE" | "BASH_LINENO" => {
                    return !self.stack_array(s).is_empty();
                }
                _ => {}
            }
        }
        // An array's name alone stands for its element 0.
        let target = self.resolve_ref(s);
        match self
            .vars
            .get(target.as_ref())
            .filter(|v| !v.attrs.unset)
            .map(|v| &v.value)
        {
            Some(Value::Array(a)) => a.contains_key(&0),
            Some(Value::Assoc(a)) => a.contains_key("0"),
            _ => self.get_str(s).is_some(),
        }
    }

    async fn binary_test(
        &mut self,
        pred: &BinaryPredicate,
        l: &str,
        r: &str,
        fds: &Fds,
    ) -> Result<bool, ShellError> {
        use BinaryPredicate as B;
        Ok(match pred {
            B::StringExactlyMatchesString => l == r,
            B::StringDoesNotExactlyMatchString => l != r,
            B::StringContainsSubstring => l.contains(r),
            // By bytes, as the C locale sorts (a byte that is not UTF-8 included).
            B::LeftSortsBeforeRight => bytetext::encode(l) < bytetext::encode(r),
            B::LeftSortsAfterRight => bytetext::encode(l) > bytetext::encode(r),
            B::ArithmeticEqualTo
            | B::ArithmeticNotEqualTo
            | B::ArithmeticLessThan
            | B::ArithmeticLessThanOrEqualTo
            | B::ArithmeticGreaterThan
            | B::ArithmeticGreaterThanOrEqualTo => {
                // bash names `[[` in the message of a bad operand.
                let in_cond = |e: ShellError| match e {
                    ShellError::ArithmeticCommand { expr, message } => {
                        ShellError::Builtin(format!("[[: {expr}: {message}"))
                    }
                    other => other,
                };
                let a = self.eval_arith(l, fds, false).await.map_err(in_cond)?;
                let b = self.eval_arith(r, fds, false).await.map_err(in_cond)?;
                match pred {
                    B::ArithmeticEqualTo => a == b,
                    B::ArithmeticNotEqualTo => a != b,
                    B::ArithmeticLessThan => a < b,
                    B::ArithmeticLessThanOrEqualTo => a <= b,
                    B::ArithmeticGreaterThan => a > b,
                    _ => a >= b,
                }
            }
            B::LeftFileIsNewerOrExistsWhenRightDoesNot
            | B::LeftFileIsOlderOrDoesNotExistWhenRightDoes => {
                let ml = self.mtime(l).await;
                let mr = self.mtime(r).await;
                let newer = match (ml, mr) {
                    (Some(a), Some(b)) => a > b,
                    (Some(_), None) => true,
                    _ => false,
                };
                let older = match (ml, mr) {
                    (Some(a), Some(b)) => a < b,
                    (None, Some(_)) => true,
                    _ => false,
                };
                if matches!(pred, B::LeftFileIsNewerOrExistsWhenRightDoesNot) {
                    newer
                } else {
                    older
                }
            }
            B::FilesReferToSameDeviceAndInodeNumbers => {
                let a = self.fs.canonicalize(&fs::join(&self.cwd, l)).await;
                let b = self.fs.canonicalize(&fs::join(&self.cwd, r)).await;
                matches!((a, b), (Ok(a), Ok(b)) if a == b)
            }
            B::StringExactlyMatchesPattern
            | B::StringDoesNotExactlyMatchPattern
            | B::StringMatchesRegex => {
                // Handled by the caller, which needs the unexpanded right side.
                false
            }
        })
    }

    async fn mtime(&self, p: &str) -> Option<SystemTime> {
        self.fs
            .stat(&fs::join(&self.cwd, p))
            .await
            .ok()
            .map(|m| m.mtime)
    }

    /// `=~`: extended regular expressions (the `regex` crate's syntax, a superset of the
    /// POSIX ERE forms scripts use); sets `BASH_REMATCH`.
    fn regex_test(&mut self, text: &str, re: &str) -> Result<bool, ShellError> {
        // In the C locale a character is a byte: the text and the regex are seen so
        // (`.` is one byte of `é`), and what the groups caught made text again.
        let bytes = !(text.is_ascii() && re.is_ascii()) && self.byte_locale();
        let (text, re) = if bytes {
            (bytetext::byte_view(text), bytetext::byte_view(re))
        } else {
            (Cow::Borrowed(text), Cow::Borrowed(re))
        };
        let (text, re) = (text.as_ref(), re.as_ref());
        let compiled = regex::RegexBuilder::new(re)
            .size_limit(REGEX_SIZE_LIMIT)
            .case_insensitive(self.shopts.on("nocasematch"))
            .build()
            .map_err(|_| ShellError::BadRegex(bytetext::normalise(re.to_string())))?;
        match compiled.captures(text) {
            Some(groups) => {
                let map = groups
                    .iter()
                    .enumerate()
                    .map(|(i, g)| {
                        (
                            i as i64,
                            g.map(|m| bytetext::normalise(m.as_str().to_string()))
                                .unwrap_or_default(),
                        )
                    })
                    .collect();
                let _ = self.set_value("BASH_REMATCH", Value::Array(map));
                Ok(true)
            }
            None => {
                let _ = self.set_value("BASH_REMATCH", Value::Array(Default::default()));
                Ok(false)
            }
        }
    }
}

/// Compiled size allowed for one `=~` regex, so a hostile pattern cannot use unbounded memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// An operand of `[[ ]]` as `set -x` shows it: as it is, an empty one as `''`.
/// `s` with a backslash before each character a regular expression reads as an
/// operator, as bash quotes the quoted part of an `=~` operand.
pub(crate) fn regex_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if REGEX_OPERATORS.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The characters of an extended regular expression that are operators.
pub(crate) const REGEX_OPERATORS: &str = ".[]()*+?{}|^$\\";

fn traced(s: &str) -> &str {
    if s.is_empty() { "''" } else { s }
}

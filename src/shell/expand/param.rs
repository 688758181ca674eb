//! `${…}` expressions: defaults, lengths, substrings, pattern removal and substitution,
//! case changes and transformations.

use super::*;
use std::borrow::Cow;

use forkbox_commands::bytetext;

/// Arrays the shell computes when they are read, always set as far as `set -u` goes.
const DYNAMIC_ARRAYS: [&str; 6] = [
    "PIPESTATUS",
    "DIRSTACK",
    "BASH_SOURCE",
    "BASH_LINENO",
    "BASH_ARGV",
    "BASH_ARGC",
];

impl Shell {
    /// Whether a `${x-…}`-family test finds `v` unset (or null, with `:`). In double quotes
    /// `${*:-…}` tests `"$*"` itself: its elements joined by `IFS`'s first character, so
    /// `set -- '' ''; IFS=; "${*:-d}"` takes the default.
    fn unset_or_null(&self, v: &PVal, test: &ParameterTestType, quoted: bool) -> bool {
        if let (PVal::List(items, true), ParameterTestType::UnsetOrNull, true) = (v, test, quoted) {
            let sep_empty = self.get_str("IFS").is_some_and(|s| s.is_empty());
            return items.is_empty()
                || (sep_empty || items.len() == 1) && items.iter().all(|s| s.is_empty());
        }
        v.is_unset_or_null(test)
    }

    /// Evaluates a `${…}` expression.
    pub(super) fn eval_param_expr<'a>(
        &'a mut self,
        expr: &'a ParameterExpr,
        quoted: bool,
        fds: &'a Fds,
    ) -> BoxFut<'a, R<PVal>> {
        Box::pin(async move {
            match expr {
                ParameterExpr::Parameter {
                    parameter,
                    indirect,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, *indirect, &v)?;
                    Ok(v)
                }
                ParameterExpr::UseDefaultValues {
                    parameter,
                    indirect,
                    test_type,
                    default_value,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    if self.unset_or_null(&v, test_type, quoted) {
                        let text = default_value.clone().unwrap_or_default();
                        let pieces = self.expand_word_in_place(&text, quoted, fds).await?;
                        Ok(PVal::Pieces(pieces))
                    } else {
                        Ok(v)
                    }
                }
                ParameterExpr::AssignDefaultValues {
                    parameter,
                    indirect,
                    test_type,
                    default_value,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    if self.unset_or_null(&v, test_type, quoted) {
                        let mut text = default_value.clone().unwrap_or_default();
                        if quoted && text.starts_with('~') {
                            // In double quotes a leading `~` of the word is literal.
                            text.insert(0, '\\');
                        }
                        let value = self.expand_str(&text, fds).await?;
                        // `${!n:=v}` assigns to the variable n names.
                        let named;
                        let parameter = if *indirect {
                            named = match self.param_value(parameter, fds).await? {
                                PVal::Str(name) => {
                                    crate::shell::parse::guarded(&name, word::parse_parameter)?
                                }
                                _ => None,
                            };
                            named.as_ref().unwrap_or(parameter)
                        } else {
                            parameter
                        };
                        match parameter {
                            Parameter::Named(name) => self.set_var(name, &value)?,
                            Parameter::NamedWithIndex { name, index } => {
                                let i = self.eval_arith(index, fds, true).await?;
                                self.set_elem(name, i, &value)?;
                            }
                            other => {
                                return Err(ShellError::ParamError {
                                    name: format!("${}", param_name(other)),
                                    message: "cannot assign in this way".into(),
                                });
                            }
                        }
                        Ok(PVal::Str(value))
                    } else {
                        Ok(v)
                    }
                }
                ParameterExpr::IndicateErrorIfNullOrUnset {
                    parameter,
                    indirect,
                    test_type,
                    error_message,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    if self.unset_or_null(&v, test_type, quoted) {
                        let message = match error_message.as_deref().filter(|m| !m.is_empty()) {
                            Some(m) => self.expand_str(m, fds).await?,
                            None => match test_type {
                                ParameterTestType::UnsetOrNull => {
                                    "parameter null or not set".into()
                                }
                                ParameterTestType::Unset => "parameter not set".into(),
                            },
                        };
                        return Err(ShellError::ParamError {
                            name: param_name(parameter),
                            message,
                        });
                    }
                    Ok(v)
                }
                ParameterExpr::UseAlternativeValue {
                    parameter,
                    indirect,
                    test_type,
                    alternative_value,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    // `"${@+x}"` with no elements is no word at all, as `"$@"` is (a
                    // double-quoted word of only such pieces makes no field by itself).
                    let at = !*indirect
                        && matches!(
                            parameter,
                            Parameter::Special(SpecialParameter::AllPositionalParameters {
                                concatenate: false
                            }) | Parameter::NamedWithAllIndices {
                                concatenate: false,
                                ..
                            }
                        );
                    if self.unset_or_null(&v, test_type, quoted) {
                        // (One empty element is one empty word: `set -- ''; "${@:+x}"`.)
                        let none = match &v {
                            PVal::List(items, _) => items.is_empty(),
                            PVal::Unset => true,
                            _ => false,
                        };
                        Ok(if at && none {
                            PVal::List(Vec::new(), false)
                        } else {
                            PVal::Str(String::new())
                        })
                    } else {
                        let text = alternative_value.clone().unwrap_or_default();
                        let mut pieces = self.expand_word_in_place(&text, quoted, fds).await?;
                        if at && quoted {
                            pieces.insert(0, Piece::ForceField);
                        }
                        Ok(PVal::Pieces(pieces))
                    }
                }
                ParameterExpr::ParameterLength {
                    parameter,
                    indirect,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, *indirect, &v)?;
                    // `set -u`: `${#a[@]}` of an array never assigned is an error (one that
                    // abandons the command with status 1), where `${a[@]}` alone is not.
                    if self.opts.nounset
                        && !*indirect
                        && let Parameter::NamedWithAllIndices { name, .. } = parameter
                        && !DYNAMIC_ARRAYS.contains(&name.as_str())
                        && self
                            .vars
                            .get(self.resolve_ref(name).as_ref())
                            .is_none_or(|v| v.attrs.unset)
                    {
                        return Err(ShellError::Expansion(format!("{name}: unbound variable")));
                    }
                    Ok(PVal::Str(match v {
                        PVal::Unset => "0".into(),
                        PVal::Str(s) => self.text_len(&s).to_string(),
                        PVal::List(l, _) => l.len().to_string(),
                        PVal::Pieces(p) => self.text_len(&join_pieces(&p)).to_string(),
                    }))
                }
                ParameterExpr::RemoveSmallestSuffixPattern {
                    parameter,
                    indirect,
                    pattern,
                }
                | ParameterExpr::RemoveLargestSuffixPattern {
                    parameter,
                    indirect,
                    pattern,
                }
                | ParameterExpr::RemoveSmallestPrefixPattern {
                    parameter,
                    indirect,
                    pattern,
                }
                | ParameterExpr::RemoveLargestPrefixPattern {
                    parameter,
                    indirect,
                    pattern,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, *indirect, &v)?;
                    let pat_text = match pattern {
                        Some(p) => self.expand_pattern(p, fds).await?,
                        None => String::new(),
                    };
                    let pat = self.pattern(&pat_text, false);
                    let (suffix, longest) = match expr {
                        ParameterExpr::RemoveSmallestSuffixPattern { .. } => (true, false),
                        ParameterExpr::RemoveLargestSuffixPattern { .. } => (true, true),
                        ParameterExpr::RemoveSmallestPrefixPattern { .. } => (false, false),
                        _ => (false, true),
                    };
                    Ok(v.map(|s| {
                        // In the C locale the value is cut between bytes.
                        let view = pat.view(s);
                        let chars: Vec<char> = view.chars().collect();
                        let kept: String = if suffix {
                            match pat.match_suffix(&view, longest) {
                                Some(n) => chars[..chars.len() - n].iter().collect(),
                                None => return s.to_string(),
                            }
                        } else {
                            match pat.match_prefix(&view, longest) {
                                Some(n) => chars[n..].iter().collect(),
                                None => return s.to_string(),
                            }
                        };
                        bytetext::normalise(kept)
                    }))
                }
                ParameterExpr::Substring {
                    parameter,
                    indirect,
                    offset,
                    length,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, *indirect, &v)?;
                    if matches!(&v, PVal::Unset) {
                        // Nothing to take from: bash does not evaluate offset nor length.
                        return Ok(PVal::Str(String::new()));
                    }
                    // bash names the parameter in an error of either expression.
                    let named = |e: ShellError| match e {
                        ShellError::Arithmetic { expr, message } => ShellError::Arithmetic {
                            expr: format!("{}: {expr}", super::param_name(parameter)),
                            message,
                        },
                        e => e,
                    };
                    let off = self
                        .eval_arith(&offset.value, fds, true)
                        .await
                        .map_err(named)?;
                    // In the C locale a string is taken in bytes.
                    let bytes = matches!(&v, PVal::Str(s) if !s.is_ascii()) && self.byte_locale();
                    if let PVal::Str(s) = &v {
                        // An offset outside the string gives nothing; bash does not
                        // evaluate the length then.
                        let n = self.text_len(s) as i64;
                        let from = if off < 0 { off.saturating_add(n) } else { off };
                        if from < 0 || from > n {
                            return Ok(PVal::Str(String::new()));
                        }
                    }
                    let len = match length {
                        Some(l) => Some(self.eval_arith(&l.value, fds, true).await.map_err(named)?),
                        None => None,
                    };
                    if let (Some(l), PVal::List(..)) = (len, &v)
                        && l < 0
                    {
                        return Err(substring_error(length.as_ref().map(|l| l.value.as_str())));
                    }
                    if let Parameter::NamedWithAllIndices { name, concatenate } = parameter {
                        let target = self.resolve_ref(name).into_owned();
                        if let Some(crate::shell::Value::Array(m)) =
                            self.vars.get(&target).map(|v| &v.value)
                        {
                            let start = if off < 0 {
                                crate::shell::next_index(m).saturating_add(off)
                            } else {
                                off
                            };
                            if start < 0 {
                                return Ok(PVal::List(Vec::new(), *concatenate));
                            }
                            let take = len.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(0));
                            let items = m
                                .range(start..)
                                .take(take)
                                .map(|(_, v)| v.clone())
                                .collect();
                            return Ok(PVal::List(items, *concatenate));
                        }
                    }
                    match v {
                        PVal::List(items, c) => {
                            let is_positional = matches!(
                                parameter,
                                Parameter::Special(
                                    SpecialParameter::AllPositionalParameters { .. }
                                )
                            );
                            let mut all = items;
                            if is_positional {
                                all.insert(0, self.arg0.clone());
                            }
                            let sliced = slice(&all, off, len).ok_or_else(|| {
                                substring_error(length.as_ref().map(|l| l.value.as_str()))
                            })?;
                            Ok(PVal::List(sliced, c))
                        }
                        other => {
                            let s = match other {
                                PVal::Str(s) => s,
                                _ => String::new(),
                            };
                            let view = if bytes {
                                bytetext::byte_view(&s)
                            } else {
                                Cow::Borrowed(s.as_str())
                            };
                            let chars: Vec<char> = view.chars().collect();
                            let sliced = slice(&chars, off, len).ok_or_else(|| {
                                substring_error(length.as_ref().map(|l| l.value.as_str()))
                            })?;
                            Ok(PVal::Str(bytetext::normalise(sliced.into_iter().collect())))
                        }
                    }
                }
                ParameterExpr::Transform {
                    parameter,
                    indirect,
                    op,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, *indirect, &v)?;
                    if matches!(op, ParameterTransformOp::PromptExpand) && self.opt_promptvars() {
                        // `${x@P}`: the escapes, then (shopt promptvars) the expansions.
                        return Ok(match v {
                            PVal::Unset => PVal::Unset,
                            PVal::Str(s) => PVal::Str(self.prompt_vars(&s, fds).await?),
                            PVal::Pieces(p) => {
                                PVal::Str(self.prompt_vars(&join_pieces(&p), fds).await?)
                            }
                            PVal::List(l, q) => {
                                let mut out = Vec::with_capacity(l.len());
                                for s in &l {
                                    out.push(self.prompt_vars(s, fds).await?);
                                }
                                PVal::List(out, q)
                            }
                        });
                    }
                    if *indirect && matches!(op, ParameterTransformOp::ToAssignmentLogic) {
                        return Ok(self.indirect_assignment(parameter, v));
                    }
                    Ok(self.transform(op, parameter, v))
                }
                ParameterExpr::UppercaseFirstChar {
                    parameter,
                    indirect,
                    pattern,
                }
                | ParameterExpr::UppercasePattern {
                    parameter,
                    indirect,
                    pattern,
                }
                | ParameterExpr::LowercaseFirstChar {
                    parameter,
                    indirect,
                    pattern,
                }
                | ParameterExpr::LowercasePattern {
                    parameter,
                    indirect,
                    pattern,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, *indirect, &v)?;
                    let pat = match pattern {
                        Some(p) if !p.is_empty() => {
                            let text = self.expand_pattern(p, fds).await?;
                            Some(self.pattern(&text, false))
                        }
                        _ => None,
                    };
                    let (upper, all) = match expr {
                        ParameterExpr::UppercaseFirstChar { .. } => (true, false),
                        ParameterExpr::UppercasePattern { .. } => (true, true),
                        ParameterExpr::LowercaseFirstChar { .. } => (false, false),
                        _ => (false, true),
                    };
                    let ascii = self.byte_locale();
                    Ok(v.map(|s| {
                        s.chars()
                            .enumerate()
                            .map(|(i, c)| {
                                let applies = (all || i == 0)
                                    && pat.as_ref().is_none_or(|p| p.matches(&c.to_string()));
                                if !applies {
                                    c.to_string()
                                } else if upper {
                                    pattern::upper_char(c, ascii).to_string()
                                } else {
                                    pattern::lower_char(c, ascii).to_string()
                                }
                            })
                            .collect()
                    }))
                }
                ParameterExpr::ReplaceSubstring {
                    parameter,
                    indirect,
                    pattern,
                    replacement,
                    match_kind,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, *indirect, &v)?;
                    let text = self.expand_pattern(pattern, fds).await?;
                    // bash folds case for `${x/pat/rep}` under nocasematch (not for
                    // `${x#pat}` or `${x%pat}`).
                    let pat = self.pattern(&text, self.shopts.on("nocasematch"));
                    let amp = self.shopts.on("patsub_replacement");
                    let rep = match replacement {
                        Some(r) => {
                            let mut parts = Vec::new();
                            for p in self.expand_sub_pieces(r, false, fds).await? {
                                match p {
                                    Piece::Text {
                                        s, quoted: true, ..
                                    } => parts.push(RepPart::Lit(s)),
                                    Piece::Text { s, .. } if !amp => parts.push(RepPart::Lit(s)),
                                    Piece::Text { s, .. } => amp_parts(&s, &mut parts),
                                    Piece::FieldBreak => parts.push(RepPart::Lit(" ".into())),
                                    Piece::StarBreak(sep) => parts.push(RepPart::Lit(sep)),
                                    Piece::ForceField => {}
                                }
                            }
                            parts
                        }
                        None => Vec::new(),
                    };
                    Ok(v.map(|s| replace(s, &pat, &rep, match_kind)))
                }
                ParameterExpr::VariableNames {
                    prefix,
                    concatenate,
                } => {
                    let mut names: Vec<String> = self
                        .vars
                        .iter()
                        .filter(|(k, v)| k.starts_with(prefix.as_str()) && !v.attrs.unset)
                        .map(|(k, _)| k.clone())
                        .collect();
                    names.sort();
                    Ok(PVal::List(names, *concatenate))
                }
                ParameterExpr::MemberKeys {
                    variable_name,
                    concatenate,
                } => {
                    let target = self.resolve_ref(variable_name);
                    let var = self.vars.get(target.as_ref()).filter(|v| !v.attrs.unset);
                    let keys = match var.map(|v| &v.value) {
                        Some(Value::Array(a)) => a.keys().map(|k| k.to_string()).collect(),
                        Some(Value::Assoc(a)) => a.keys().cloned().collect(),
                        Some(Value::Str(_)) => vec!["0".to_string()],
                        None => Vec::new(),
                    };
                    Ok(PVal::List(keys, *concatenate))
                }
            }
        })
    }
}

impl Shell {
    /// A prompt string's escapes decoded and its `$…` and backquotes expanded.
    async fn prompt_vars(&mut self, s: &str, fds: &Fds) -> R<String> {
        let body = self.prompt_decode(s, true);
        self.expand_str(&format!("\"{body}\""), fds).await
    }

    /// Whether `shopt promptvars` is on.
    fn opt_promptvars(&self) -> bool {
        self.shopts.on("promptvars")
    }

    /// `${!p@A}`: the variable `p` leads to, described. For a name reference bash gives
    /// a scalar target the name as its value (`x='x'`) and an array its element 0; for
    /// a plain indirection it is that variable as `${x@A}` shows it.
    fn indirect_assignment(&mut self, p: &Parameter, v: PVal) -> PVal {
        let Parameter::Named(n) = p else {
            return self.transform(&ParameterTransformOp::ToAssignmentLogic, p, v);
        };
        let nameref = self.vars.get(n).is_some_and(|r| r.attrs.nameref);
        let target = if nameref {
            self.resolve_ref(n).into_owned()
        } else {
            self.get_str(n).unwrap_or_default()
        };
        if !crate::shell::builtins::is_name(&target) {
            return self.transform(&ParameterTransformOp::ToAssignmentLogic, p, v);
        }
        let v = match self.vars.get(&target) {
            Some(t) if nameref && !t.attrs.unset => match &t.value {
                crate::shell::Value::Str(_) => {
                    // The scalar's own value gives way to its name.
                    let flags = crate::shell::vars::attr_letters(t);
                    let quoted = crate::shell::vars::single_quote(&target, self.byte_locale());
                    return PVal::Str(if flags.is_empty() {
                        format!("{target}={quoted}")
                    } else {
                        format!("declare -{flags} {target}={quoted}")
                    });
                }
                value => value
                    .as_str()
                    .map_or(PVal::Unset, |s| PVal::Str(s.to_string())),
            },
            _ => v,
        };
        let shown = Parameter::Named(target);
        self.transform(&ParameterTransformOp::ToAssignmentLogic, &shown, v)
    }

    /// `${x@OP}`: the value transformed, or described (`@A`, `@a`, `@K`).
    fn transform(&mut self, op: &ParameterTransformOp, p: &Parameter, v: PVal) -> PVal {
        use crate::shell::vars::{array_body, attr_letters, decl_quote, key_quote, single_quote};
        let (name, whole) = match p {
            Parameter::Named(n) => (Some(n.as_str()), false),
            Parameter::NamedWithAllIndices { name, .. } => (Some(name.as_str()), true),
            Parameter::NamedWithIndex { name, .. } => (Some(name.as_str()), false),
            _ => (None, false),
        };
        let declared = name
            .map(|n| self.resolve_ref(n).into_owned())
            .and_then(|n| self.vars.get(&n).cloned().map(|v| (n, v)));
        let var = declared.clone().filter(|(_, v)| !v.attrs.unset);
        let ascii = self.byte_locale();
        match op {
            ParameterTransformOp::ToUpperCase => v.map(|s| pattern::upper_str(s, ascii)),
            ParameterTransformOp::ToLowerCase => v.map(|s| pattern::lower_str(s, ascii)),
            ParameterTransformOp::CapitalizeInitial => v.map(|s| upper_first(s, ascii)),
            ParameterTransformOp::Quoted => match v {
                PVal::Unset => PVal::Unset,
                v => v.map(|s| single_quote(s, ascii)),
            },
            ParameterTransformOp::ExpandEscapeSequences => {
                let utf8 = !self.byte_locale();
                v.map(|s| super::ansi_c_decode_in(s, utf8))
            }
            ParameterTransformOp::PromptExpand => v.map(|s| self.prompt_expand(s)),
            ParameterTransformOp::ToAttributeFlags => match (&v, declared) {
                (_, None) => PVal::Str(String::new()),
                (PVal::List(..), Some((_, var))) => {
                    let flags = attr_letters(&var);
                    v.map(|_| flags.clone())
                }
                (_, Some((_, var))) => PVal::Str(attr_letters(&var)),
            },
            ParameterTransformOp::ToAssignmentLogic => match (var, declared) {
                // Declared without a value (`declare -i n`, `declare -A m`): the
                // attributes alone.
                (None, Some((n, d))) => {
                    let flags = attr_letters(&d);
                    PVal::Str(if flags.is_empty() {
                        String::new()
                    } else {
                        format!("declare -{flags} {n}")
                    })
                }
                (None, None) => PVal::Str(String::new()),
                (Some((n, var)), _) => {
                    let flags = attr_letters(&var);
                    match (&var.value, whole) {
                        (crate::shell::Value::Str(s), _) => {
                            if flags.is_empty() {
                                PVal::Str(format!("{n}={}", single_quote(s, ascii)))
                            } else {
                                PVal::Str(format!(
                                    "declare -{flags} {n}={}",
                                    single_quote(s, ascii)
                                ))
                            }
                        }
                        (value, true) => PVal::Str(format!(
                            "declare -{flags} {n}={}",
                            array_body(value, ascii).unwrap_or_default()
                        )),
                        (_, false) => match v {
                            PVal::Str(s) => PVal::Str(format!(
                                "declare -{flags} {n}={}",
                                single_quote(&s, ascii)
                            )),
                            // `${m@A}` of an array without element 0.
                            PVal::Unset => PVal::Str(format!("declare -{flags} {n}")),
                            other => other,
                        },
                    }
                }
            },
            ParameterTransformOp::PossiblyQuoteWithArraysExpanded { separate_words } => {
                let is_assoc = matches!(&var, Some((_, v)) if matches!(v.value, crate::shell::Value::Assoc(_)));
                let pairs: Option<Vec<(String, String)>> = match (&var, whole) {
                    (Some((_, var)), true) => match &var.value {
                        crate::shell::Value::Array(m) => {
                            Some(m.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
                        }
                        crate::shell::Value::Assoc(m) => Some(
                            m.iter()
                                .map(|(k, v)| (key_quote(k, ascii), v.clone()))
                                .collect(),
                        ),
                        crate::shell::Value::Str(_) => None,
                    },
                    _ => None,
                };
                match (pairs, separate_words) {
                    (Some(pairs), true) => PVal::List(
                        pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
                        matches!(v, PVal::List(_, true)),
                    ),
                    (Some(pairs), false) => {
                        let items: Vec<String> = pairs
                            .into_iter()
                            .map(|(k, v)| format!("{k} {}", decl_quote(&v, ascii)))
                            .collect();
                        let mut s = items.join(" ");
                        if is_assoc && !s.is_empty() {
                            // bash ends an associative array's pairs with a blank.
                            s.push(' ');
                        }
                        PVal::Str(s)
                    }
                    (None, _) => match v {
                        PVal::Unset => PVal::Unset,
                        v => v.map(|s| single_quote(s, ascii)),
                    },
                }
            }
        }
    }
}

impl Shell {
    /// Whether the shell's locale (the first set of `LC_ALL`, `LC_CTYPE`, `LANG`) is not
    /// UTF-8: there a character is a byte, as bash counts in the C locale.
    pub(crate) fn byte_locale(&self) -> bool {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .find_map(|k| self.get_str(k).filter(|v| !v.is_empty()))
            .map(|v| v.to_ascii_lowercase())
            .unwrap_or_default();
        !(locale.contains("utf-8") || locale.contains("utf8"))
    }

    /// What joins the elements of `"$*"`: the first character of `IFS` (its first byte
    /// in the C locale), a blank when `IFS` is unset, nothing when it is empty.
    pub(crate) fn ifs_first(&self) -> String {
        match self.get_str("IFS") {
            None => " ".to_string(),
            Some(s) if !s.is_ascii() && self.byte_locale() => {
                bytetext::byte_view(&s).chars().take(1).collect()
            }
            Some(s) => s.chars().next().map(String::from).unwrap_or_default(),
        }
    }

    /// The length of `s` in characters of the shell's locale (`${#s}`).
    fn text_len(&self, s: &str) -> usize {
        if !s.is_ascii() && self.byte_locale() {
            bytetext::byte_len(s)
        } else {
            s.chars().count()
        }
    }

    /// The word of `${x:-word}` or `${x:+word}`, expanded where it stands: unquoted, its
    /// literal text is split like the rest of the expansion; its quoted parts are not.
    /// Inside double quotes, single quotes and a leading `~` in the word are literal.
    async fn expand_word_in_place(&mut self, text: &str, quoted: bool, fds: &Fds) -> R<Vec<Piece>> {
        // In double quotes (and here-documents) `\}` in the word is a `}`, as `\$` is a `$`.
        let unescaped;
        let text = if quoted && text.contains("\\}") {
            unescaped = unescape_braces(text);
            unescaped.as_str()
        } else {
            text
        };
        let mut pieces = if quoted && (text.contains('\'') || text.starts_with('~')) {
            let mut parsed = Vec::new();
            for mut p in parse_word(text)? {
                match &p.piece {
                    // In double quotes `'` is an ordinary character: what is between two
                    // of them is expanded as the rest is (`"${x:+'$x'}"` gives `'y'`).
                    WordPiece::SingleQuotedText(inner) if inner.contains(['$', '`']) => {
                        let quote = |at: usize| WordPieceWithSource {
                            piece: WordPiece::Text("'".to_string()),
                            start_index: at,
                            end_index: at,
                        };
                        parsed.push(quote(p.start_index));
                        let body = super::super::parse::guarded(inner, word::parse_heredoc)?
                            .ok_or_else(|| ShellError::BadSubstitution(text.to_string()))?;
                        parsed.extend(body);
                        parsed.push(quote(p.end_index));
                        continue;
                    }
                    WordPiece::SingleQuotedText(_) | WordPiece::TildeExpansion(_) => {
                        if let Some(raw) = text.get(p.start_index..p.end_index) {
                            p.piece = WordPiece::Text(raw.to_string());
                        }
                    }
                    _ => {}
                }
                parsed.push(p);
            }
            let mut out = Vec::new();
            self.expand_pieces(&parsed, quoted, fds, &mut out).await?;
            out
        } else {
            self.expand_sub_pieces(text, quoted, fds).await?
        };
        if !quoted {
            for p in &mut pieces {
                if let Piece::Text {
                    quoted: false,
                    split,
                    ..
                } = p
                {
                    *split = true;
                }
            }
        }
        Ok(pieces)
    }
}

pub(super) fn slice<T: Clone>(items: &[T], off: i64, len: Option<i64>) -> Option<Vec<T>> {
    let n = items.len() as i64;
    let start = if off < 0 { n + off } else { off };
    if start < 0 || start > n {
        return Some(Vec::new());
    }
    let end = match len {
        None => n,
        Some(l) if l < 0 => {
            let e = n + l;
            if e < start {
                return None;
            }
            e
        }
        // `${x:1:9223372036854775807}`: the sum would overflow.
        Some(l) => start.saturating_add(l).min(n),
    };
    Some(items[start as usize..end as usize].to_vec())
}

pub(super) fn substring_error(len: Option<&str>) -> ShellError {
    ShellError::Arithmetic {
        expr: len.unwrap_or("").to_string(),
        message: "substring expression < 0".into(),
    }
}

pub(super) fn upper_first(s: &str, ascii: bool) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => std::iter::once(pattern::upper_char(f, ascii))
            .chain(c)
            .collect(),
        None => String::new(),
    }
}

/// `text` with each `\}` (an escaped backslash aside) turned into `}`.
fn unescape_braces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('}') => out.push('}'),
            Some(n) => {
                out.push('\\');
                out.push(n);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Quotes `s` for reuse as shell input (`${x@Q}`, `set -x`).
pub(crate) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A piece of the replacement of `${x/pat/rep}`: text, or (an unquoted `&`, bash 5.2's
/// `patsub_replacement`) the text the pattern matched.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RepPart {
    Lit(String),
    Match,
}

/// The pieces of unquoted replacement text under `patsub_replacement`: each `&` is the
/// match; a backslash (left there by an expansion, as in `${x/b/$y}`) makes a following
/// `&` or backslash literal and is itself kept before anything else, as in bash.
fn amp_parts(s: &str, parts: &mut Vec<RepPart>) {
    let mut lit = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('\\' | '&')) => {
                lit.extend(chars.next());
            }
            '&' => {
                parts.push(RepPart::Lit(std::mem::take(&mut lit)));
                parts.push(RepPart::Match);
            }
            c => lit.push(c),
        }
    }
    parts.push(RepPart::Lit(lit));
}

/// A replacement without `&`.
#[cfg(test)]
pub(super) fn lit(s: &str) -> Vec<RepPart> {
    vec![RepPart::Lit(s.to_string())]
}

/// The replacement text for one match.
fn fill(rep: &[RepPart], matched: &str) -> String {
    let mut out = String::new();
    fill_into(rep, matched, &mut out);
    out
}

/// Appends the replacement for `matched` to `out`.
fn fill_into(rep: &[RepPart], matched: &str, out: &mut String) {
    for p in rep {
        match p {
            RepPart::Lit(s) => out.push_str(s),
            RepPart::Match => out.push_str(matched),
        }
    }
}

pub(super) fn replace(
    s: &str,
    pat: &Pattern,
    rep: &[RepPart],
    kind: &SubstringMatchKind,
) -> String {
    if pat.on_bytes() && !s.is_ascii() {
        // The C locale's pattern: over the value's bytes, then back to text.
        let view = pat.view(s);
        return bytetext::normalise(replace_in(&view, pat, rep, kind));
    }
    replace_in(s, pat, rep, kind)
}

fn replace_in(s: &str, pat: &Pattern, rep: &[RepPart], kind: &SubstringMatchKind) -> String {
    match kind {
        SubstringMatchKind::Prefix => match pat.match_prefix(s, true) {
            Some(n) => {
                let chars: Vec<char> = s.chars().collect();
                let matched: String = chars[..n].iter().collect();
                format!(
                    "{}{}",
                    fill(rep, &matched),
                    chars[n..].iter().collect::<String>()
                )
            }
            None => s.to_string(),
        },
        SubstringMatchKind::Suffix => match pat.match_suffix(s, true) {
            Some(n) => {
                let chars: Vec<char> = s.chars().collect();
                let matched: String = chars[chars.len() - n..].iter().collect();
                format!(
                    "{}{}",
                    chars[..chars.len() - n].iter().collect::<String>(),
                    fill(rep, &matched)
                )
            }
            None => s.to_string(),
        },
        SubstringMatchKind::FirstOccurrence | SubstringMatchKind::Anywhere => {
            let all = matches!(kind, SubstringMatchKind::Anywhere);
            if let Some(lit) = pat.literal() {
                // A literal pattern (`${s//a/b}`): one search over the whole value, the
                // same leftmost matches that `find_in` gives one at a time.
                let mut out = String::with_capacity(s.len());
                let mut i = 0;
                if !lit.is_empty() {
                    for (start, m) in s.match_indices(lit.as_str()) {
                        out.push_str(&s[i..start]);
                        fill_into(rep, m, &mut out);
                        i = start + m.len();
                        if !all {
                            break;
                        }
                    }
                }
                out.push_str(&s[i..]);
                return out;
            }
            let mut out = String::new();
            let mut i = 0;
            // As bash: a match may be empty (`${x//*(z)/-}` is `-a-b-c`); then the
            // replacement goes before the character there, and the search goes on after
            // it. Past the last character only an empty value is tried.
            while i < s.len() || s.is_empty() {
                let Some((start, end)) = pat.find_in(s, i) else {
                    break;
                };
                out.push_str(&s[i..start]);
                fill_into(rep, &s[start..end], &mut out);
                i = end;
                if end == start {
                    let Some(c) = s[start..].chars().next() else {
                        break;
                    };
                    out.push(c);
                    i += c.len_utf8();
                }
                if !all {
                    break;
                }
            }
            out.push_str(&s[i.min(s.len())..]);
            out
        }
    }
}

//! `${…}` expressions: defaults, lengths, substrings, pattern removal and substitution,
//! case changes and transformations.

use super::*;

impl Shell {
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
                    self.check_unset(parameter, &v)?;
                    Ok(v)
                }
                ParameterExpr::UseDefaultValues {
                    parameter,
                    indirect,
                    test_type,
                    default_value,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    if v.is_unset_or_null(test_type) {
                        let text = default_value.clone().unwrap_or_default();
                        let pieces = self.expand_sub_pieces(&text, quoted, fds).await?;
                        Ok(PVal::Str(join_or_mark(pieces, quoted)))
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
                    if v.is_unset_or_null(test_type) {
                        let text = default_value.clone().unwrap_or_default();
                        let value = self.expand_str(&text, fds).await?;
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
                    if v.is_unset_or_null(test_type) {
                        let message = match error_message {
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
                    if v.is_unset_or_null(test_type) {
                        Ok(PVal::Str(String::new()))
                    } else {
                        let text = alternative_value.clone().unwrap_or_default();
                        let pieces = self.expand_sub_pieces(&text, quoted, fds).await?;
                        Ok(PVal::Str(join_or_mark(pieces, quoted)))
                    }
                }
                ParameterExpr::ParameterLength {
                    parameter,
                    indirect,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, &v)?;
                    Ok(PVal::Str(match v {
                        PVal::Unset => "0".into(),
                        PVal::Str(s) => s.chars().count().to_string(),
                        PVal::List(l, _) => l.len().to_string(),
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
                    self.check_unset(parameter, &v)?;
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
                        let chars: Vec<char> = s.chars().collect();
                        if suffix {
                            match pat.match_suffix(s, longest) {
                                Some(n) => chars[..chars.len() - n].iter().collect(),
                                None => s.to_string(),
                            }
                        } else {
                            match pat.match_prefix(s, longest) {
                                Some(n) => chars[n..].iter().collect(),
                                None => s.to_string(),
                            }
                        }
                    }))
                }
                ParameterExpr::Substring {
                    parameter,
                    indirect,
                    offset,
                    length,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, &v)?;
                    let off = self.eval_arith(&offset.value, fds, true).await?;
                    let len = match length {
                        Some(l) => Some(self.eval_arith(&l.value, fds, true).await?),
                        None => None,
                    };
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
                            let chars: Vec<char> = s.chars().collect();
                            let sliced = slice(&chars, off, len).ok_or_else(|| {
                                substring_error(length.as_ref().map(|l| l.value.as_str()))
                            })?;
                            Ok(PVal::Str(sliced.into_iter().collect()))
                        }
                    }
                }
                ParameterExpr::Transform {
                    parameter,
                    indirect,
                    op,
                } => {
                    let v = self.resolve(parameter, *indirect, fds).await?;
                    self.check_unset(parameter, &v)?;
                    match op {
                        ParameterTransformOp::ToUpperCase => Ok(v.map(|s| s.to_uppercase())),
                        ParameterTransformOp::ToLowerCase => Ok(v.map(|s| s.to_lowercase())),
                        ParameterTransformOp::CapitalizeInitial => Ok(v.map(upper_first)),
                        ParameterTransformOp::Quoted => Ok(v.map(shell_quote)),
                        ParameterTransformOp::ExpandEscapeSequences => Ok(v.map(ansi_c_decode)),
                        _ => Err(ShellError::Unsupported(format!(
                            "${{{}@{}}}",
                            param_name(parameter),
                            transform_letter(op)
                        ))),
                    }
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
                    self.check_unset(parameter, &v)?;
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
                    Ok(v.map(|s| {
                        s.chars()
                            .enumerate()
                            .map(|(i, c)| {
                                let applies = (all || i == 0)
                                    && pat.as_ref().is_none_or(|p| p.matches(&c.to_string()));
                                if !applies {
                                    c.to_string()
                                } else if upper {
                                    c.to_uppercase().to_string()
                                } else {
                                    c.to_lowercase().to_string()
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
                    self.check_unset(parameter, &v)?;
                    let text = self.expand_pattern(pattern, fds).await?;
                    let pat = self.pattern(&text, false);
                    let rep = match replacement {
                        Some(r) => self.expand_str(r, fds).await?,
                        None => String::new(),
                    };
                    Ok(v.map(|s| replace(s, &pat, &rep, match_kind)))
                }
                ParameterExpr::VariableNames {
                    prefix,
                    concatenate,
                } => {
                    let mut names: Vec<String> = self
                        .vars
                        .keys()
                        .filter(|k| k.starts_with(prefix.as_str()))
                        .cloned()
                        .collect();
                    names.sort();
                    Ok(PVal::List(names, *concatenate))
                }
                ParameterExpr::MemberKeys {
                    variable_name,
                    concatenate,
                } => {
                    let keys = match self.vars.get(variable_name).map(|v| &v.value) {
                        Some(Value::Array(a)) => a.keys().map(|k| k.to_string()).collect(),
                        Some(Value::Str(_)) => vec!["0".to_string()],
                        None => Vec::new(),
                    };
                    Ok(PVal::List(keys, *concatenate))
                }
            }
        })
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

pub(super) fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Quotes `s` for reuse as shell input (`${x@Q}`, `set -x`).
pub(crate) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub(super) fn transform_letter(op: &ParameterTransformOp) -> &'static str {
    match op {
        ParameterTransformOp::PromptExpand => "P",
        ParameterTransformOp::ToAssignmentLogic => "A",
        ParameterTransformOp::ToAttributeFlags => "a",
        ParameterTransformOp::PossiblyQuoteWithArraysExpanded {
            separate_words: true,
        } => "k",
        ParameterTransformOp::PossiblyQuoteWithArraysExpanded {
            separate_words: false,
        } => "K",
        _ => "?",
    }
}

pub(super) fn replace(s: &str, pat: &Pattern, rep: &str, kind: &SubstringMatchKind) -> String {
    let chars: Vec<char> = s.chars().collect();
    match kind {
        SubstringMatchKind::Prefix => match pat.match_prefix(s, true) {
            Some(n) => format!("{rep}{}", chars[n..].iter().collect::<String>()),
            None => s.to_string(),
        },
        SubstringMatchKind::Suffix => match pat.match_suffix(s, true) {
            Some(n) => format!(
                "{}{rep}",
                chars[..chars.len() - n].iter().collect::<String>()
            ),
            None => s.to_string(),
        },
        SubstringMatchKind::FirstOccurrence | SubstringMatchKind::Anywhere => {
            let all = matches!(kind, SubstringMatchKind::Anywhere);
            let mut out = String::new();
            let mut i = 0;
            while i <= s.len() {
                match pat.find_in(s, i) {
                    Some((start, end)) if end > start => {
                        out.push_str(&s[i..start]);
                        out.push_str(rep);
                        i = end;
                        if !all {
                            break;
                        }
                    }
                    _ => break,
                }
            }
            out.push_str(&s[i.min(s.len())..]);
            out
        }
    }
}

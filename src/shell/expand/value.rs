//! The value of a parameter: positional and special parameters, variables (through
//! name references), indirection, and `set -u`'s check.

use super::*;

impl Shell {
    pub(super) fn param_value(&mut self, p: &Parameter, fds: &Fds) -> BoxFut<'_, R<PVal>> {
        let p = p.clone();
        let fds = fds.clone();
        Box::pin(async move {
            Ok(match &p {
                Parameter::Positional(n) => {
                    let n = *n as usize;
                    if n == 0 {
                        PVal::Str(self.arg0.clone())
                    } else {
                        self.positional
                            .get(n - 1)
                            .cloned()
                            .map_or(PVal::Unset, PVal::Str)
                    }
                }
                Parameter::Special(s) => match s {
                    SpecialParameter::AllPositionalParameters { concatenate } => {
                        PVal::List(self.positional.clone(), *concatenate)
                    }
                    SpecialParameter::PositionalParameterCount => {
                        PVal::Str(self.positional.len().to_string())
                    }
                    SpecialParameter::LastExitStatus => PVal::Str(self.last_status.to_string()),
                    SpecialParameter::CurrentOptionFlags => PVal::Str(self.option_flags()),
                    SpecialParameter::ProcessId => PVal::Str(self.pid.to_string()),
                    SpecialParameter::LastBackgroundProcessId => self
                        .jobs
                        .last_pid
                        .map_or(PVal::Unset, |p| PVal::Str(p.to_string())),
                    SpecialParameter::ShellName => PVal::Str(self.arg0.clone()),
                },
                Parameter::Named(name) => {
                    if self.is_circular_ref(name) {
                        let msg = format!(
                            "{}warning: {name}: circular name reference\n",
                            self.message_prefix()
                        );
                        let _ = fds.stderr().write_str(&msg).await;
                    }
                    self.named_value(name)
                }
                Parameter::NamedWithIndex { name, index } if Self::is_stack_array(name) => {
                    let i = self.eval_arith(index, &fds, true).await?;
                    let list = self.stack_array(name);
                    let n = list.len() as i64;
                    let i = if i < 0 { n + i } else { i };
                    usize::try_from(i)
                        .ok()
                        .and_then(|k| list.get(k))
                        .map_or(PVal::Unset, |s| PVal::Str(s.clone()))
                }
                Parameter::NamedWithAllIndices { name, concatenate }
                    if Self::is_stack_array(name) =>
                {
                    PVal::List(self.stack_array(name), *concatenate)
                }
                Parameter::NamedWithIndex { name, index } => {
                    if name == "PIPESTATUS" {
                        let i = self.eval_arith(index, &fds, true).await?;
                        return Ok(usize::try_from(i)
                            .ok()
                            .and_then(|i| self.pipestatus.get(i))
                            .map_or(PVal::Unset, |s| PVal::Str(s.to_string())));
                    }
                    let target = self.resolve_ref(name).into_owned();
                    if self.is_assoc(&target) {
                        let key = self.expand_str(index, &fds).await?;
                        if key.is_empty() {
                            // bash reports an empty key and expands to nothing.
                            let msg = ShellError::BadSubscript(target.clone())
                                .message_with(&self.message_prefix());
                            let _ = fds.stderr().write_str(&msg).await;
                            return Ok(PVal::Unset);
                        }
                        return Ok(match self.vars.get(&target).map(|v| &v.value) {
                            Some(Value::Assoc(a)) => {
                                a.get(&key).cloned().map_or(PVal::Unset, PVal::Str)
                            }
                            _ => PVal::Unset,
                        });
                    }
                    let i = self.eval_arith(index, &fds, true).await?;
                    let var = self.vars.get(&target).filter(|v| !v.attrs.unset);
                    match var.map(|v| &v.value) {
                        Some(Value::Array(a)) => {
                            let idx = if i < 0 {
                                crate::shell::next_index(a).wrapping_add(i)
                            } else {
                                i
                            };
                            if idx < 0 {
                                let msg = ShellError::BadSubscript(target.clone())
                                    .message_with(&self.message_prefix());
                                let _ = fds.stderr().write_str(&msg).await;
                            }
                            a.get(&idx).cloned().map_or(PVal::Unset, PVal::Str)
                        }
                        Some(Value::Str(s)) if i == 0 || i == -1 => PVal::Str(s.clone()),
                        _ => PVal::Unset,
                    }
                }
                Parameter::NamedWithAllIndices { name, concatenate } => {
                    if name == "PIPESTATUS" {
                        return Ok(PVal::List(
                            self.pipestatus.iter().map(|s| s.to_string()).collect(),
                            *concatenate,
                        ));
                    }
                    let target = self.resolve_ref(name);
                    let var = self.vars.get(target.as_ref()).filter(|v| !v.attrs.unset);
                    match var.map(|v| &v.value) {
                        Some(Value::Array(a)) => {
                            PVal::List(a.values().cloned().collect(), *concatenate)
                        }
                        Some(Value::Assoc(a)) => {
                            PVal::List(a.values().cloned().collect(), *concatenate)
                        }
                        Some(Value::Str(s)) => PVal::List(vec![s.clone()], *concatenate),
                        None => PVal::List(Vec::new(), *concatenate),
                    }
                }
            })
        })
    }

    pub(super) fn named_value(&mut self, name: &str) -> PVal {
        if let Some(v) = self.dynamic_var(name) {
            return PVal::Str(v);
        }
        match name {
            "PIPESTATUS" => {
                return PVal::Str(
                    self.pipestatus
                        .first()
                        .map(|s| s.to_string())
                        .unwrap_or_default(),
                );
            }
            "SHLVL" if !self.vars.contains_key("SHLVL") => return PVal::Str("1".into()),
            "BASH_ARGV0" if !self.vars.contains_key("BASH_ARGV0") => {
                return PVal::Str(self.arg0.clone());
            }
            "FUNCNAME" | "BASH_LINENO" | "BASH_SOURCE" | "BASH_ARGV" | "BASH_ARGC" => {
                return self
                    .stack_array(name)
                    .into_iter()
                    .next()
                    .map_or(PVal::Unset, PVal::Str);
            }
            _ => {}
        }
        self.get_str(name).map_or(PVal::Unset, PVal::Str)
    }

    /// `$-`: the letters of the options that are on, in bash's order.
    pub(crate) fn option_flags(&self) -> String {
        let o = &self.opts;
        [
            (o.allexport, 'a'),
            (o.notify, 'b'),
            (o.errexit, 'e'),
            (o.noglob, 'f'),
            (o.hashall, 'h'),
            (self.interactive, 'i'),
            (o.keyword, 'k'),
            (o.monitor, 'm'),
            (o.noexec, 'n'),
            (o.privileged, 'p'),
            (o.onecmd, 't'),
            (o.nounset, 'u'),
            (o.verbose, 'v'),
            (o.xtrace, 'x'),
            (o.braceexpand, 'B'),
            (o.noclobber, 'C'),
            (o.errtrace, 'E'),
            (o.histexpand, 'H'),
            (o.physical, 'P'),
            (o.functrace, 'T'),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, c)| *c)
        .chain(self.input_letter.filter(|_| !self.interactive))
        .collect()
    }

    /// Resolves `${!x}`: the parameter named by x's value (or, for a name reference, the
    /// name it holds).
    pub(super) async fn resolve(&mut self, p: &Parameter, indirect: bool, fds: &Fds) -> R<PVal> {
        if indirect
            && let Parameter::Named(n) = p
            && let Some(v) = self
                .vars
                .get(n)
                .filter(|v| v.attrs.nameref && !v.attrs.unset)
        {
            return Ok(v
                .value
                .as_str()
                .map_or(PVal::Unset, |s| PVal::Str(s.to_string())));
        }
        let v = self.param_value(p, fds).await?;
        if !indirect {
            return Ok(v);
        }
        // `${!a[@]@Q}`: the elements, joined, name the parameter.
        let v = match v {
            PVal::List(l, _) if !l.is_empty() => PVal::Str(l.join(" ")),
            PVal::List(..) => return Ok(PVal::Unset),
            v => v,
        };
        match v {
            PVal::Str(name) => {
                let target = crate::shell::parse::guarded(&name, word::parse_parameter)?
                    .filter(|t| {
                        param_name(t) == name || matches!(t, Parameter::NamedWithIndex { .. })
                    })
                    .ok_or_else(|| {
                        ShellError::Expansion(format!("{name}: invalid variable name"))
                    })?;
                self.param_value(&target, fds).await
            }
            // An unset positional parameter names nothing: `${!1-x}` is `x`.
            PVal::Unset if matches!(p, Parameter::Positional(_)) => Ok(PVal::Unset),
            PVal::Unset => Err(ShellError::Expansion(format!(
                "{}: invalid indirect expansion",
                param_name(p)
            ))),
            PVal::List(..) | PVal::Pieces(_) => Err(ShellError::BadSubstitution(param_name(p))),
        }
    }

    pub(super) fn check_unset(&self, p: &Parameter, indirect: bool, v: &PVal) -> R<()> {
        if self.opts.nounset
            && matches!(v, PVal::Unset)
            && !matches!(
                p,
                Parameter::Special(SpecialParameter::AllPositionalParameters { .. })
            )
        {
            let name = match p {
                Parameter::Positional(n) => format!("${n}"),
                Parameter::Special(SpecialParameter::LastBackgroundProcessId) => "$!".into(),
                other => param_name(other),
            };
            return Err(ShellError::Unbound(if indirect {
                format!("!{name}")
            } else {
                name
            }));
        }
        Ok(())
    }
}

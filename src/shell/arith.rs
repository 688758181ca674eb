//! Evaluation of bash arithmetic (`$((…))`, `((…))`, `for ((…))`, `let`) over the AST
//! that brush-parser's arithmetic parser builds. 64-bit signed, wrapping like bash.

use brush_parser::ast::{
    ArithmeticExpr, ArithmeticTarget, BinaryOperator, UnaryAssignmentOperator, UnaryOperator,
};

/// How deeply a variable's value may itself be evaluated as an expression
/// (`a=b; b=c; c=1; $((a))`): bash's own limit is about this size, and it stops `a=a` loops.
pub const MAX_ARITH_DEPTH: usize = 64;

/// Where arithmetic reads and writes variables.
pub trait ArithEnv {
    fn get_var(&self, name: &str) -> Option<String>;
    fn set_var(&mut self, name: &str, value: i64) -> Result<(), String>;
    fn get_elem(&self, name: &str, index: i64) -> Option<String>;
    fn set_elem(&mut self, name: &str, index: i64, value: i64) -> Result<(), String>;
}

/// Parses and evaluates `text` (already expanded). Errors are bash-worded messages
/// without the expression prefix.
pub fn eval_str(env: &mut dyn ArithEnv, text: &str) -> Result<i64, String> {
    eval_str_depth(env, text, 0)
}

fn eval_str_depth(env: &mut dyn ArithEnv, text: &str, depth: usize) -> Result<i64, String> {
    if depth > MAX_ARITH_DEPTH {
        return Err("expression recursion level exceeded".to_string());
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(0);
    }
    if let Ok(n) = trimmed.parse::<i64>()
        && !trimmed.starts_with('0')
    {
        return Ok(n);
    }
    let nesting = nesting(trimmed);
    if nesting > super::parse::MAX_NESTING {
        return Err(format!(
            "expression recursion level exceeded (error token is \"{}\")",
            trimmed.chars().take(32).collect::<String>()
        ));
    }
    // Parsing and evaluating recurse once per level: give them the stack for it.
    super::parse::with_stack(nesting, || {
        let expr = super::parse::guard_parser(|| brush_parser::arithmetic::parse(trimmed))
            .and_then(Result::ok)
            .ok_or_else(|| {
                format!("syntax error: invalid arithmetic operator (error token is \"{trimmed}\")")
            })?;
        Evaluator { env, depth }.eval(&expr)
    })
}

/// How deep an expression nests, over-counted: parentheses, runs of unary operators
/// (`- - ! ~x`), and the right-leaning chains of `?:` and assignments.
fn nesting(text: &str) -> usize {
    let (mut parens, mut unary, mut chains, mut max) = (0usize, 0usize, 0usize, 0usize);
    let mut after_operand = false;
    let bytes = text.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b' ' | b'\t' | b'\n' => continue,
            b'(' => {
                parens += 1;
                after_operand = false;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                after_operand = true;
            }
            b'-' | b'+' | b'!' | b'~' if !after_operand => unary += 1,
            b'?' => {
                chains += 1;
                after_operand = false;
            }
            b'=' if !matches!(bytes.get(i + 1), Some(b'='))
                && !matches!(
                    i.checked_sub(1).map(|p| bytes[p]),
                    Some(b'=' | b'!' | b'<' | b'>')
                ) =>
            {
                chains += 1;
                after_operand = false;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                after_operand = true;
                unary = 0;
            }
            _ => after_operand = false,
        }
        max = max.max(parens + unary + chains);
    }
    max
}

struct Evaluator<'a> {
    env: &'a mut dyn ArithEnv,
    depth: usize,
}

impl Evaluator<'_> {
    fn value_of(&mut self, raw: Option<String>) -> Result<i64, String> {
        match raw {
            None => Ok(0),
            Some(v) => eval_str_depth(self.env, &v, self.depth + 1),
        }
    }

    fn read(&mut self, target: &ArithmeticTarget) -> Result<i64, String> {
        match target {
            ArithmeticTarget::Variable(name) => {
                let raw = self.env.get_var(name);
                self.value_of(raw)
            }
            ArithmeticTarget::ArrayElement(name, index) => {
                let i = self.eval(index)?;
                let raw = self.env.get_elem(name, i);
                self.value_of(raw)
            }
        }
    }

    fn write(&mut self, target: &ArithmeticTarget, value: i64) -> Result<i64, String> {
        match target {
            ArithmeticTarget::Variable(name) => self.env.set_var(name, value)?,
            ArithmeticTarget::ArrayElement(name, index) => {
                let i = self.eval(index)?;
                self.env.set_elem(name, i, value)?;
            }
        }
        Ok(value)
    }

    fn eval(&mut self, e: &ArithmeticExpr) -> Result<i64, String> {
        match e {
            ArithmeticExpr::Literal(n) => Ok(*n),
            ArithmeticExpr::Reference(t) => self.read(t),
            ArithmeticExpr::UnaryOp(op, x) => {
                let v = self.eval(x)?;
                Ok(match op {
                    UnaryOperator::UnaryPlus => v,
                    UnaryOperator::UnaryMinus => v.wrapping_neg(),
                    UnaryOperator::BitwiseNot => !v,
                    UnaryOperator::LogicalNot => i64::from(v == 0),
                })
            }
            ArithmeticExpr::BinaryOp(op, l, r) => match op {
                BinaryOperator::LogicalAnd => {
                    if self.eval(l)? == 0 {
                        return Ok(0);
                    }
                    Ok(i64::from(self.eval(r)? != 0))
                }
                BinaryOperator::LogicalOr => {
                    if self.eval(l)? != 0 {
                        return Ok(1);
                    }
                    Ok(i64::from(self.eval(r)? != 0))
                }
                BinaryOperator::Comma => {
                    self.eval(l)?;
                    self.eval(r)
                }
                _ => {
                    let a = self.eval(l)?;
                    let b = self.eval(r)?;
                    apply(op, a, b)
                }
            },
            ArithmeticExpr::Conditional(c, t, f) => {
                if self.eval(c)? != 0 {
                    self.eval(t)
                } else {
                    self.eval(f)
                }
            }
            ArithmeticExpr::Assignment(target, value) => {
                let v = self.eval(value)?;
                self.write(target, v)
            }
            ArithmeticExpr::BinaryAssignment(op, target, value) => {
                let old = self.read(target)?;
                let rhs = self.eval(value)?;
                let v = apply(op, old, rhs)?;
                self.write(target, v)
            }
            ArithmeticExpr::UnaryAssignment(op, target) => {
                let old = self.read(target)?;
                match op {
                    UnaryAssignmentOperator::PrefixIncrement => {
                        self.write(target, old.wrapping_add(1))
                    }
                    UnaryAssignmentOperator::PrefixDecrement => {
                        self.write(target, old.wrapping_sub(1))
                    }
                    UnaryAssignmentOperator::PostfixIncrement => {
                        self.write(target, old.wrapping_add(1))?;
                        Ok(old)
                    }
                    UnaryAssignmentOperator::PostfixDecrement => {
                        self.write(target, old.wrapping_sub(1))?;
                        Ok(old)
                    }
                }
            }
        }
    }
}

fn apply(op: &BinaryOperator, a: i64, b: i64) -> Result<i64, String> {
    Ok(match op {
        BinaryOperator::Power => {
            if b < 0 {
                return Err("exponent less than 0 (error token is \"0\")".to_string());
            }
            let mut r: i64 = 1;
            for _ in 0..b.min(64) {
                r = r.wrapping_mul(a);
            }
            if b > 64 {
                // a**b for huge b: only 0, 1 and -1 give anything but overflow garbage;
                // compute by squaring to stay bounded in time.
                r = pow_wrapping(a, b);
            }
            r
        }
        BinaryOperator::Multiply => a.wrapping_mul(b),
        BinaryOperator::Divide => {
            if b == 0 {
                return Err(div_zero());
            }
            a.wrapping_div(b)
        }
        BinaryOperator::Modulo => {
            if b == 0 {
                return Err(div_zero());
            }
            a.wrapping_rem(b)
        }
        BinaryOperator::Add => a.wrapping_add(b),
        BinaryOperator::Subtract => a.wrapping_sub(b),
        BinaryOperator::ShiftLeft => a.wrapping_shl((b & 63) as u32),
        BinaryOperator::ShiftRight => a.wrapping_shr((b & 63) as u32),
        BinaryOperator::LessThan => i64::from(a < b),
        BinaryOperator::LessThanOrEqualTo => i64::from(a <= b),
        BinaryOperator::GreaterThan => i64::from(a > b),
        BinaryOperator::GreaterThanOrEqualTo => i64::from(a >= b),
        BinaryOperator::Equals => i64::from(a == b),
        BinaryOperator::NotEquals => i64::from(a != b),
        BinaryOperator::BitwiseAnd => a & b,
        BinaryOperator::BitwiseXor => a ^ b,
        BinaryOperator::BitwiseOr => a | b,
        BinaryOperator::LogicalAnd => i64::from(a != 0 && b != 0),
        BinaryOperator::LogicalOr => i64::from(a != 0 || b != 0),
        BinaryOperator::Comma => b,
    })
}

fn pow_wrapping(mut base: i64, mut exp: i64) -> i64 {
    let mut r: i64 = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            r = r.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    r
}

fn div_zero() -> String {
    "division by 0 (error token is \"0\")".to_string()
}

#[cfg(test)]
mod nesting_tests {
    use super::*;

    #[test]
    fn nesting_is_over_counted_never_under() {
        assert_eq!(nesting("1 + 2 * 3"), 0);
        assert_eq!(nesting("((1))"), 2);
        assert_eq!(nesting("- - -x"), 3);
        assert_eq!(nesting("a ? b : c ? d : e"), 2);
        assert_eq!(nesting("a = b == c"), 1);
        assert!(nesting(&"-".repeat(100_000)) > super::super::parse::MAX_NESTING);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Env(HashMap<String, String>);

    impl ArithEnv for Env {
        fn get_var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn set_var(&mut self, name: &str, value: i64) -> Result<(), String> {
            self.0.insert(name.to_string(), value.to_string());
            Ok(())
        }
        fn get_elem(&self, name: &str, index: i64) -> Option<String> {
            self.0.get(&format!("{name}[{index}]")).cloned()
        }
        fn set_elem(&mut self, name: &str, index: i64, value: i64) -> Result<(), String> {
            self.0.insert(format!("{name}[{index}]"), value.to_string());
            Ok(())
        }
    }

    fn ev(s: &str) -> Result<i64, String> {
        eval_str(&mut Env::default(), s)
    }

    #[test]
    fn operators() {
        assert_eq!(ev("1 + 2 * 3"), Ok(7));
        assert_eq!(ev("(1 + 2) * 3"), Ok(9));
        assert_eq!(ev("2 ** 10"), Ok(1024));
        assert_eq!(ev("7 / 2"), Ok(3));
        assert_eq!(ev("-7 % 3"), Ok(-1));
        assert_eq!(ev("1 << 4 | 1"), Ok(17));
        assert_eq!(ev("3 > 2 && 2 > 1"), Ok(1));
        assert_eq!(ev("0 || 0"), Ok(0));
        assert_eq!(ev("1 ? 5 : 6"), Ok(5));
        assert_eq!(ev("0x1f + 010 + 2#101"), Ok(31 + 8 + 5));
        assert_eq!(ev("!5"), Ok(0));
        assert_eq!(ev("~0"), Ok(-1));
        assert_eq!(ev(""), Ok(0));
    }

    #[test]
    fn errors() {
        assert!(ev("1/0").unwrap_err().contains("division by 0"));
        assert!(ev("1%0").is_err());
        assert!(ev("1 +").is_err());
    }

    #[test]
    fn variables_and_assignment() {
        let mut env = Env::default();
        env.0.insert("x".into(), "5".into());
        env.0.insert("e".into(), "x*2".into());
        assert_eq!(eval_str(&mut env, "x++ + ++x"), Ok(5 + 7));
        assert_eq!(env.0["x"], "7");
        assert_eq!(eval_str(&mut env, "y = x += 3"), Ok(10));
        assert_eq!(env.0["y"], "10");
        assert_eq!(eval_str(&mut env, "e + 1"), Ok(21));
        assert_eq!(eval_str(&mut env, "unset_var + 1"), Ok(1));
        assert_eq!(eval_str(&mut env, "0 && (z = 1)"), Ok(0));
        assert!(!env.0.contains_key("z"));
        env.0.insert("loop".into(), "loop".into());
        assert!(eval_str(&mut env, "loop").is_err());
    }
}

//! bc's numbers: arbitrary-precision decimals, an integer and a scale (digits after the
//! point), with bc's rules for the scale of each operation's result: results are
//! truncated, never rounded.

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

/// Value `n / 10^scale`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Num {
    pub(crate) n: BigInt,
    pub(crate) scale: usize,
}

/// The largest scale bc computes with here (bounds memory and time per operation).
pub(crate) const MAX_SCALE: usize = 10_000;

pub(crate) fn pow10(k: usize) -> BigInt {
    num_traits::pow(BigInt::from(10), k)
}

impl Num {
    pub(crate) fn int(v: i64) -> Num {
        Num {
            n: BigInt::from(v),
            scale: 0,
        }
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.n.is_zero()
    }

    pub(crate) fn is_neg(&self) -> bool {
        self.n.sign() == Sign::Minus
    }

    /// The same value at scale `s` (truncating when `s` is smaller).
    pub(crate) fn rescale(&self, s: usize) -> Num {
        let n = if s >= self.scale {
            &self.n * pow10(s - self.scale)
        } else {
            trunc_div(&self.n, &pow10(self.scale - s))
        };
        Num { n, scale: s }
    }

    pub(crate) fn cmp(&self, o: &Num) -> std::cmp::Ordering {
        let s = self.scale.max(o.scale);
        self.rescale(s).n.cmp(&o.rescale(s).n)
    }

    pub(crate) fn add(&self, o: &Num) -> Num {
        let s = self.scale.max(o.scale);
        Num {
            n: self.rescale(s).n + o.rescale(s).n,
            scale: s,
        }
    }

    pub(crate) fn sub(&self, o: &Num) -> Num {
        self.add(&o.neg())
    }

    pub(crate) fn neg(&self) -> Num {
        Num {
            n: -&self.n,
            scale: self.scale,
        }
    }

    pub(crate) fn mul(&self, o: &Num, scale: usize) -> Num {
        let full = self.scale + o.scale;
        let rs = full.min(scale.max(self.scale).max(o.scale));
        Num {
            n: &self.n * &o.n,
            scale: full,
        }
        .rescale(rs)
    }

    /// `self / o` at `scale` digits; `None` when `o` is zero.
    pub(crate) fn div(&self, o: &Num, scale: usize) -> Option<Num> {
        if o.is_zero() {
            return None;
        }
        let num = &self.n * pow10(scale + o.scale);
        let den = &o.n * pow10(self.scale);
        Some(Num {
            n: trunc_div(&num, &den),
            scale,
        })
    }

    /// bc's `%`: `self - (self / o) * o`, the quotient at `scale` digits.
    pub(crate) fn rem(&self, o: &Num, scale: usize) -> Option<Num> {
        let q = self.div(o, scale)?;
        let prod = Num {
            n: &q.n * &o.n,
            scale: q.scale + o.scale,
        };
        Some(self.sub(&prod))
    }

    /// `self ^ e` for an integer exponent; `None` for 0 ^ negative.
    pub(crate) fn pow(&self, e: &BigInt, scale: usize) -> Option<Num> {
        let neg = e.is_negative();
        let mag = e.abs().to_usize()?;
        let full = Num {
            n: num_traits::pow(self.n.clone(), mag),
            scale: self.scale.checked_mul(mag)?,
        };
        if neg {
            Num::int(1).div(&full, scale)
        } else {
            let rs = full.scale.min(scale.max(self.scale));
            Some(full.rescale(rs))
        }
    }

    /// Square root at `max(scale, self.scale)` digits; `None` for a negative number.
    pub(crate) fn sqrt(&self, scale: usize) -> Option<Num> {
        if self.is_neg() {
            return None;
        }
        let rs = scale.max(self.scale);
        let n = &self.n * pow10(2 * rs - self.scale);
        Some(Num {
            n: n.sqrt(),
            scale: rs,
        })
    }

    /// The integer part.
    pub(crate) fn trunc(&self) -> BigInt {
        trunc_div(&self.n, &pow10(self.scale))
    }

    /// bc's `length`: significant digits.
    pub(crate) fn length(&self) -> usize {
        if self.n.is_zero() {
            return self.scale.max(1);
        }
        let digits = self.n.abs().to_string().len();
        digits.max(self.scale)
    }

    /// The digits of this number in `base`, as bc prints them (without line splitting).
    pub(crate) fn to_base(&self, base: u64) -> String {
        if self.n.is_zero() {
            return "0".into();
        }
        let mut s = String::new();
        if self.is_neg() {
            s.push('-');
        }
        let abs = Num {
            n: self.n.abs(),
            scale: self.scale,
        };
        let int = abs.trunc();
        let frac = abs.sub(&Num {
            n: int.clone(),
            scale: 0,
        });
        let wide = base > 16;
        let width = (base - 1).to_string().len();
        let digit = |d: u64, s: &mut String| {
            if wide {
                s.push_str(&format!(" {d:0width$}"));
            } else {
                s.push(char::from_digit(d as u32, 16).map_or('?', |c| c.to_ascii_uppercase()));
            }
        };
        if base == 10 {
            let txt = abs.n.to_string();
            let sc = abs.scale;
            if txt.len() > sc {
                s.push_str(&txt[..txt.len() - sc]);
            }
            if sc > 0 {
                s.push('.');
                if txt.len() < sc {
                    s.push_str(&"0".repeat(sc - txt.len()));
                    s.push_str(&txt);
                } else {
                    s.push_str(&txt[txt.len() - sc..]);
                }
            }
            return s;
        }
        let b = BigInt::from(base);
        if !int.is_zero() {
            let mut digits = Vec::new();
            let mut v = int;
            while !v.is_zero() {
                let (q, r) = v.div_rem(&b);
                digits.push(r.to_u64().unwrap_or(0));
                v = q;
            }
            for d in digits.iter().rev() {
                digit(*d, &mut s);
            }
        }
        if abs.scale > 0 {
            s.push('.');
            let mut f = frac;
            let mut t = BigInt::one();
            let base_num = Num {
                n: b.clone(),
                scale: 0,
            };
            while t.to_string().len() <= abs.scale {
                f = f.mul(&base_num, abs.scale);
                let d = f.trunc();
                digit(d.to_u64().unwrap_or(0), &mut s);
                f = f.sub(&Num { n: d, scale: 0 });
                t *= &b;
            }
        }
        s
    }
}

/// Division truncating toward zero (bc never rounds).
pub(crate) fn trunc_div(a: &BigInt, b: &BigInt) -> BigInt {
    // BigInt's `/` truncates toward zero.
    a / b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Num {
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        Num {
            n: format!("{i}{f}").parse().unwrap(),
            scale: f.len(),
        }
    }

    #[test]
    fn arithmetic_scales() {
        assert_eq!(n("1").div(&n("3"), 5).unwrap().to_base(10), ".33333");
        assert_eq!(n("1.50").mul(&n("2"), 0).to_base(10), "3.00");
        assert_eq!(n("7").rem(&n("3"), 2).unwrap().to_base(10), ".01");
        assert_eq!(n("2").sqrt(10).unwrap().to_base(10), "1.4142135623");
        assert_eq!(n("5.75").to_base(2), "101.1100000");
        assert_eq!(n("12345").to_base(100), " 01 23 45");
        assert_eq!(n("-255").to_base(16), "-FF");
        assert_eq!(
            n("2").pow(&BigInt::from(-2), 3).unwrap().to_base(10),
            ".250"
        );
    }
}

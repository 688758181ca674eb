//! The `-l` math library (s, c, a, l, e, j), computed natively: each function works at
//! extra precision and truncates to `scale` digits, as bc's results are truncated.

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::num::{Num, pow10};

/// Guard digits carried beyond the requested scale.
const GUARD: usize = 12;

/// Fixed-point value `v / 10^p`.
#[derive(Clone)]
struct Fx {
    v: BigInt,
    p: usize,
}

impl Fx {
    fn from(n: &Num, p: usize) -> Fx {
        Fx {
            v: n.rescale(p).n,
            p,
        }
    }
    fn one(p: usize) -> Fx {
        Fx { v: pow10(p), p }
    }
    fn mul(&self, o: &Fx) -> Fx {
        Fx {
            v: &self.v * &o.v / pow10(self.p),
            p: self.p,
        }
    }
    fn div(&self, o: &Fx) -> Fx {
        if o.v.is_zero() {
            return Fx {
                v: BigInt::zero(),
                p: self.p,
            };
        }
        Fx {
            v: &self.v * pow10(self.p) / &o.v,
            p: self.p,
        }
    }
    fn divi(&self, k: i64) -> Fx {
        Fx {
            v: &self.v / k,
            p: self.p,
        }
    }
    fn add(&self, o: &Fx) -> Fx {
        Fx {
            v: &self.v + &o.v,
            p: self.p,
        }
    }
    fn sub(&self, o: &Fx) -> Fx {
        Fx {
            v: &self.v - &o.v,
            p: self.p,
        }
    }
    fn to_num(&self, scale: usize) -> Num {
        Num {
            n: self.v.clone(),
            scale: self.p,
        }
        .rescale(scale)
    }
    fn small(&self) -> bool {
        self.v.is_zero()
    }
}

/// e^x at precision p (x already fixed-point).
fn exp(x: &Fx) -> Fx {
    let p = x.p;
    if x.v.is_negative() {
        let pos = Fx { v: -&x.v, p };
        return Fx::one(p).div(&exp(&pos));
    }
    // Halve until below 1, then square back.
    let mut k = 0;
    let mut y = x.clone();
    while y.v >= pow10(p) {
        y = y.divi(2);
        k += 1;
    }
    let mut sum = Fx::one(p);
    let mut term = Fx::one(p);
    let mut i = 1;
    loop {
        term = term.mul(&y).divi(i);
        if term.small() {
            break;
        }
        sum = sum.add(&term);
        i += 1;
    }
    for _ in 0..k {
        sum = sum.mul(&sum);
    }
    sum
}

/// ln(x) for x > 0.
fn ln(x: &Fx) -> Fx {
    let p = x.p;
    // Bring x near 1 by square roots: ln x = 2^k ln x^(1/2^k).
    let mut y = x.clone();
    let mut k = 0u32;
    let lo = pow10(p) * 9 / 10;
    let hi = pow10(p) * 11 / 10;
    while (y.v < lo || y.v > hi) && k < 2000 {
        y = Fx {
            v: num_integer::Roots::sqrt(&(&y.v * pow10(p))),
            p,
        };
        k += 1;
    }
    // ln y = 2 atanh((y-1)/(y+1)).
    let one = Fx::one(p);
    let z = y.sub(&one).div(&y.add(&one));
    let z2 = z.mul(&z);
    let mut sum = z.clone();
    let mut pw = z;
    let mut i = 3;
    loop {
        pw = pw.mul(&z2);
        let t = pw.divi(i);
        if t.small() {
            break;
        }
        sum = sum.add(&t);
        i += 2;
    }
    Fx {
        v: sum.v * 2 * num_traits::pow(BigInt::from(2), k as usize),
        p,
    }
}

/// atan(x).
fn atan(x: &Fx) -> Fx {
    let p = x.p;
    let one = Fx::one(p);
    if x.v.is_negative() {
        let pos = Fx { v: -&x.v, p };
        let r = atan(&pos);
        return Fx { v: -r.v, p };
    }
    // atan x = 2 atan(x / (1 + sqrt(1 + x^2))), until x is small.
    let mut y = x.clone();
    let mut doublings = 0u32;
    let small = pow10(p) / 10;
    while y.v > small && doublings < 200 {
        let s = one.add(&y.mul(&y));
        let root = Fx {
            v: num_integer::Roots::sqrt(&(&s.v * pow10(p))),
            p,
        };
        y = y.div(&one.add(&root));
        doublings += 1;
    }
    let y2 = y.mul(&y);
    let mut sum = y.clone();
    let mut pw = y;
    let mut i = 3i64;
    let mut sign = -1;
    loop {
        pw = pw.mul(&y2);
        let t = pw.divi(i);
        if t.small() {
            break;
        }
        sum = if sign < 0 { sum.sub(&t) } else { sum.add(&t) };
        sign = -sign;
        i += 2;
    }
    Fx {
        v: sum.v * num_traits::pow(BigInt::from(2), doublings as usize),
        p,
    }
}

fn pi(p: usize) -> Fx {
    let one = Fx::one(p);
    // Machin: pi = 16 atan(1/5) - 4 atan(1/239).
    let a = atan(&one.divi(5));
    let b = atan(&one.divi(239));
    Fx {
        v: a.v * 16 - b.v * 4,
        p,
    }
}

/// sin(x).
fn sin(x: &Fx) -> Fx {
    let p = x.p;
    let two_pi = Fx { v: pi(p).v * 2, p };
    // Reduce to (-2pi, 2pi).
    let q = &x.v / &two_pi.v;
    let y = Fx {
        v: &x.v - q * &two_pi.v,
        p,
    };
    let y2 = y.mul(&y);
    let mut sum = y.clone();
    let mut term = y;
    let mut i = 1i64;
    loop {
        term = term.mul(&y2).divi((i + 1) * (i + 2));
        i += 2;
        if term.small() {
            break;
        }
        term = Fx { v: -term.v, p };
        sum = sum.add(&term);
    }
    sum
}

fn bessel(n: i64, x: &Fx) -> Fx {
    let p = x.p;
    let m = n.unsigned_abs();
    let half = x.divi(2);
    // (x/2)^m / m!
    let mut term = Fx::one(p);
    for i in 1..=m {
        term = term.mul(&half).divi(i as i64);
    }
    let h2 = half.mul(&half);
    let mut sum = term.clone();
    let mut k = 1i64;
    loop {
        term = term.mul(&h2).divi(k * (k + m as i64));
        term = Fx { v: -term.v, p };
        if term.small() {
            break;
        }
        sum = sum.add(&term);
        k += 1;
    }
    if n < 0 && m % 2 == 1 {
        sum = Fx { v: -sum.v, p };
    }
    sum
}

/// Runs library function `name` on `args` at `scale`; `None` when it is not one.
pub(crate) fn call(name: &str, args: &[Num], scale: usize) -> Option<Result<Num, String>> {
    let p = scale + GUARD + 4;
    let arg = |i: usize| args.get(i).map(|a| Fx::from(a, p));
    let want = |n: usize| {
        if args.len() != n {
            Err("Parameter number mismatch".to_string())
        } else {
            Ok(())
        }
    };
    Some(match name {
        "e" => want(1).map(|_| exp(&arg(0).unwrap_or(Fx::one(p))).to_num(scale)),
        "l" => want(1).and_then(|_| {
            let x = arg(0).unwrap_or(Fx::one(p));
            if !x.v.is_positive() {
                // bc's library gives a huge negative number for l(0) and below; here an error.
                Err("Math error: logarithm of a non-positive number".to_string())
            } else {
                Ok(ln(&x).to_num(scale))
            }
        }),
        "s" => want(1).map(|_| sin(&arg(0).unwrap_or(Fx::one(p))).to_num(scale)),
        "c" => want(1).map(|_| {
            let x = arg(0).unwrap_or(Fx::one(p));
            let half_pi = pi(p).divi(2);
            sin(&x.add(&half_pi)).to_num(scale)
        }),
        "a" => want(1).map(|_| atan(&arg(0).unwrap_or(Fx::one(p))).to_num(scale)),
        "j" => want(2).map(|_| {
            let n = args[0].trunc().to_i64().unwrap_or(0);
            bessel(n, &arg(1).unwrap_or(Fx::one(p))).to_num(scale)
        }),
        _ => return None,
    })
}

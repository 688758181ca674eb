//! `rand()` and `srand()` as gawk computes them, so a seeded program prints the numbers
//! gawk prints.
//!
//! gawk ships the BSD `random(3)`: an additive lagged-Fibonacci generator over the
//! trinomial x^63 + x + 1 (the 63-word table its 256-byte state array selects), filled by
//! the Park–Miller "minimal standard" LCG from the seed and run 630 steps before use;
//! gawk passes its output through a 512-slot Bays–Durham shuffle. `rand()` draws twice
//! and combines the two 31-bit values into one double in [0, 1).

/// Words of the generator's table (the degree of its trinomial).
const DEGREE: usize = 63;
/// Distance between the two taps (the trinomial's middle term).
const SEPARATION: usize = 1;
/// Slots of the shuffle table (a power of two: an output's low bits pick the slot).
const SHUFFLE: usize = 512;
/// 2^31: one more than the largest raw output.
const DIVISOR: f64 = 2_147_483_648.0;

/// The generator's whole state.
pub struct Random {
    table: [u32; DEGREE],
    front: usize,
    rear: usize,
    shuffle: [u32; SHUFFLE],
    /// The last shuffled output: its low bits choose the next slot.
    last: u32,
    /// The shuffle table is filled on the first draw after seeding.
    fill_shuffle: bool,
}

/// One Park–Miller step, x * 16807 mod (2^31 - 1), by Schrage's method as BSD writes it
/// (a zero input is replaced, since zero is a fixed point).
fn park_miller(x: i32) -> i32 {
    let x = if x == 0 { 123_459_876 } else { x };
    let (hi, lo) = (x / 127_773, x % 127_773);
    let y = 16_807 * lo - 2_836 * hi;
    if y < 0 { y + 0x7fff_ffff } else { y }
}

impl Random {
    /// The state gawk starts with (as after `srand(1)`).
    pub fn new() -> Random {
        let mut r = Random {
            table: [0; DEGREE],
            front: SEPARATION,
            rear: 0,
            shuffle: [0; SHUFFLE],
            last: 0,
            fill_shuffle: true,
        };
        r.seed(1);
        r
    }

    /// `srandom(seed)`.
    pub fn seed(&mut self, seed: u32) {
        self.table[0] = seed;
        for i in 1..DEGREE {
            self.table[i] = park_miller(self.table[i - 1] as i32) as u32;
        }
        self.front = SEPARATION;
        self.rear = 0;
        self.fill_shuffle = true;
        for _ in 0..10 * DEGREE {
            self.next_raw();
        }
    }

    /// One step of the additive generator: 31 bits.
    fn step(&mut self) -> u32 {
        let sum = self.table[self.front].wrapping_add(self.table[self.rear]);
        self.table[self.front] = sum;
        self.front += 1;
        self.rear += 1;
        if self.front == DEGREE {
            self.front = 0;
        } else if self.rear == DEGREE {
            self.rear = 0;
        }
        sum >> 1
    }

    /// `random()`: a step through the shuffle table.
    fn next_raw(&mut self) -> u32 {
        if self.fill_shuffle {
            for i in 0..SHUFFLE {
                self.shuffle[i] = self.step();
            }
            self.last = self.step();
            self.fill_shuffle = false;
        }
        let fresh = self.step();
        let slot = self.last as usize % SHUFFLE;
        self.last = self.shuffle[slot];
        self.shuffle[slot] = fresh;
        self.last
    }

    /// `rand()`: two draws as one double in [0, 1) (the ±0.5 keeps the low bits of the
    /// sum from mattering, as gawk's does).
    pub fn next_f64(&mut self) -> f64 {
        loop {
            let high = f64::from(self.next_raw());
            let low = f64::from(self.next_raw());
            let v = 0.5 + (high / DIVISOR + low) / DIVISOR - 0.5;
            if v != 1.0 {
                return v;
            }
        }
    }
}

/// The seed `srand(x)` keeps (and a later `srand` returns): x truncated to a C `long`,
/// out-of-range values giving the x86 conversion's `LONG_MIN`.
pub fn seed_of(x: f64) -> i64 {
    /// 2^63: the first value past a `long`.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if (-LIMIT..LIMIT).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_gawk() {
        // gawk 5.2: `srand(N); printf "%.17g", rand()`.
        let mut r = Random::new();
        assert_eq!(format!("{:.17}", r.next_f64()), "0.92404581539912467");
        assert_eq!(format!("{:.17}", r.next_f64()), "0.59390861929587824");
        r.seed(5);
        assert_eq!(format!("{:.17}", r.next_f64()), "0.19779973608556267");
        r.seed(seed_of(-3.0) as u32);
        assert_eq!(format!("{:.17}", r.next_f64()), "0.15035677330766584");
        assert_eq!(seed_of(1e20), i64::MIN);
        assert_eq!(seed_of(1.9), 1);
    }
}

//! The pseudo-random generator behind scripts' `math.random`, as Redis's
//! `rand.c`: the 48-bit linear congruential generator of `lrand48` (state
//! x, next x = (0x5DEECE66D·x + 0xB) mod 2^48, output the top 31 bits),
//! seeded by `math.randomseed` and otherwise continuing across scripts
//! from Redis's fixed initial state, so the same calls give the numbers
//! Redis gives. One generator per server, shared by EVAL scripts and
//! functions as Redis shares its one.

use std::sync::atomic::{AtomicU64, Ordering};

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const INCREMENT: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;
/// Redis's initial state (X2, X1, X0 = 0x1234, 0xABCD, 0x330E).
const INITIAL: u64 = 0x1234_ABCD_330E;
/// `REDIS_LRAND48_MAX`.
pub const LRAND48_MAX: u64 = i32::MAX as u64;

/// The generator's state, updated atomically (scripts run one at a time,
/// so there is no contention; the atomic makes sharing it safe).
pub struct Rand48(AtomicU64);

impl Default for Rand48 {
    fn default() -> Self {
        Rand48(AtomicU64::new(INITIAL))
    }
}

impl Rand48 {
    /// `redisSrand48`: the seed's low 32 bits become the state's high bits.
    pub fn seed(&self, seed: i32) {
        let state = ((seed as u32 as u64) << 16) | 0x330E;
        self.0.store(state, Ordering::Relaxed);
    }

    /// `redisLrand48`: the next number in 0..2^31.
    pub fn next(&self) -> u64 {
        let next = self
            .0
            .load(Ordering::Relaxed)
            .wrapping_mul(MULTIPLIER)
            .wrapping_add(INCREMENT)
            & MASK;
        self.0.store(next, Ordering::Relaxed);
        next >> 17
    }

    /// `math.random()`'s fraction in [0, 1), as Redis computes it.
    pub fn fraction(&self) -> f64 {
        (self.next() % LRAND48_MAX) as f64 / LRAND48_MAX as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_draws_match_redis() {
        // A fresh redis-server 7.0.15: EVAL "return math.random(1000)" 0,
        // twice, answers 397 then 841.
        let rand = Rand48::default();
        let draw = |r: &Rand48| (r.fraction() * 1000.0).floor() as i64 + 1;
        assert_eq!(draw(&rand), 397);
        assert_eq!(draw(&rand), 841);
    }
}

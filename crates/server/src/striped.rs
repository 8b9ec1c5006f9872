//! A counter that every thread adds to and few read: one cache line per
//! thread, summed when read.
//!
//! An atomic increment of one shared counter moves its cache line to the
//! incrementing core every time another core incremented it last: with
//! every worker counting every write, the line travels on each write and
//! the increments queue behind one another. Here each thread adds to its
//! own stripe, a line no other thread writes (until there are more threads
//! than stripes, when two share one, which stays correct: the add is
//! atomic). A read sums every stripe, so it is for counters read seldom:
//! a schedule's check, INFO.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per counter: one per worker on a 64-core machine.
const STRIPES: usize = 64;

/// A counter's share kept by one thread, alone on its cache lines: 128
/// bytes, since cores fetch lines in adjacent pairs.
#[derive(Default)]
#[repr(align(128))]
struct Stripe(AtomicU64);

/// A sum of additions made by many threads.
pub struct StripedCounter {
    stripes: Box<[Stripe; STRIPES]>,
}

impl Default for StripedCounter {
    fn default() -> StripedCounter {
        StripedCounter {
            stripes: Box::new(std::array::from_fn(|_| Stripe::default())),
        }
    }
}

/// Threads take stripes in the order they first count.
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

impl StripedCounter {
    /// Adds `n` to the calling thread's stripe.
    pub fn add(&self, n: u64) {
        let stripe = STRIPE.with(|s| *s);
        self.stripes[stripe].0.fetch_add(n, Ordering::Relaxed);
    }

    /// Everything added so far. Additions made while it sums may or may not
    /// be counted, as with one atomic counter read at some instant.
    pub fn sum(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additions_from_many_threads_all_count() {
        let counter = StripedCounter::default();
        // More threads than stripes, so some share one.
        std::thread::scope(|scope| {
            for _ in 0..(STRIPES + 8) {
                scope.spawn(|| (0..1_000).for_each(|_| counter.add(1)));
            }
        });
        counter.add(5);
        assert_eq!(counter.sum(), (STRIPES as u64 + 8) * 1_000 + 5);
    }
}

//! Latency histograms: how long commands and background work take.
//!
//! Redis 7 keeps an HDR histogram per command (nanoseconds, two
//! significant digits, 3072 counters) and shows it two ways: LATENCY
//! HISTOGRAM folds it into power-of-two buckets whose upper bounds are 1,
//! 2, 4, 8, 16, 33, 66, ... microseconds, and INFO latencystats reads
//! percentiles from the full resolution. Durations are whole microseconds
//! in both servers, so keel keeps exactly those reporting buckets and
//! splits each into [`SUB_BUCKETS`] equal parts: the buckets give LATENCY
//! HISTOGRAM the keys and counts Redis would give for the same samples,
//! and the parts give percentiles at most 1/16 above the true value
//! (Redis's are within 1%). The trade: 417 counters instead of 3072, small
//! enough for every worker thread to keep its own histogram of every
//! command it runs.
//!
//! A [`Histogram`] has one writer, the thread that owns it, and any number
//! of readers. Its counters are relaxed atomics that the writer updates
//! with a plain load and store, so a sample costs a bucket lookup and two
//! uncontended stores: no lock and no locked read-modify-write. Readers
//! add the threads' histograms into a [`Snapshot`] when asked (INFO,
//! LATENCY HISTOGRAM, the metrics endpoint); a sample recorded meanwhile
//! may be in the counts and not yet in the sum, or the other way round.
//!
//! The buckets continue Redis's series past its one-second ceiling to
//! about 35 seconds, as a backpressure pause can last that long. Slower
//! samples go to an overflow counter that, like the samples Redis clamps
//! at one second, no reported bucket includes (Prometheus counts them in
//! `+Inf`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::stats::bump;

/// Reporting buckets: Redis's twenty LATENCY HISTOGRAM buckets and six
/// more in the same series.
pub const BUCKETS: usize = 26;

/// Equal parts of each reporting bucket that percentiles are read from.
const SUB_BUCKETS: usize = 16;

/// Counters of a histogram: every part of every bucket, then the overflow.
const SLOTS: usize = BUCKETS * SUB_BUCKETS + 1;

/// The counter of samples above the last bucket.
const OVERFLOW: usize = SLOTS - 1;

/// Inclusive upper bounds of the reporting buckets, in microseconds.
/// Redis's HDR histogram reports at 1024·2^k ns, and its report counts
/// everything up to the highest value sharing a counter with that level:
/// 1032·2^k − 1 ns, as two significant digits make that counter 8·2^k ns
/// wide. So its bucket k holds the whole microseconds up to that value.
pub const BUCKET_BOUNDS_USEC: [u64; BUCKETS] = bucket_bounds();

const fn bucket_bounds() -> [u64; BUCKETS] {
    let mut bounds = [0; BUCKETS];
    let mut k = 0;
    while k < BUCKETS {
        bounds[k] = ((1032u64 << k) - 1) / 1000;
        k += 1;
    }
    bounds
}

/// The lowest value of bucket `bucket` and how many whole microseconds it
/// spans.
const fn bucket_span(bucket: usize) -> (u64, u64) {
    let low = match bucket {
        0 => 0,
        b => BUCKET_BOUNDS_USEC[b - 1] + 1,
    };
    (low, BUCKET_BOUNDS_USEC[bucket] - low + 1)
}

/// Samples under this many microseconds, nearly every command's, find
/// their counter in [`QUICK_SLOTS`]: a table load per sample instead of a
/// search of the bounds and a division.
const QUICK_USEC: usize = 128;

const QUICK_SLOTS: [u16; QUICK_USEC] = {
    let mut slots = [0; QUICK_USEC];
    let mut usec = 0;
    while usec < QUICK_USEC {
        slots[usec] = slot_by_bounds(usec as u64) as u16;
        usec += 1;
    }
    slots
};

/// The counter a sample of `usec` microseconds is counted in.
fn slot(usec: u64) -> usize {
    match QUICK_SLOTS.get(usec as usize) {
        Some(&slot) => slot as usize,
        None => slot_by_bounds(usec),
    }
}

/// [`slot`], found from the bucket bounds.
const fn slot_by_bounds(usec: u64) -> usize {
    let mut bucket = 0;
    while bucket < BUCKETS && BUCKET_BOUNDS_USEC[bucket] < usec {
        bucket += 1;
    }
    if bucket == BUCKETS {
        return OVERFLOW;
    }
    let (low, width) = bucket_span(bucket);
    bucket * SUB_BUCKETS + ((usec - low) * SUB_BUCKETS as u64 / width) as usize
}

/// The lowest and highest microsecond values counter `slot` counts; the
/// overflow reads as the last bound, as Redis reads its clamped samples
/// as its ceiling.
fn slot_range(slot: usize) -> (u64, u64) {
    if slot == OVERFLOW {
        let ceiling = BUCKET_BOUNDS_USEC[BUCKETS - 1];
        return (ceiling, ceiling);
    }
    let (bucket, part) = (slot / SUB_BUCKETS, (slot % SUB_BUCKETS) as u64);
    let (low, width) = bucket_span(bucket);
    let parts = SUB_BUCKETS as u64;
    let start = |part: u64| low + (part * width).div_ceil(parts);
    (start(part), start(part + 1) - 1)
}

/// One thread's histogram of durations.
pub struct Histogram {
    counts: [AtomicU64; SLOTS],
    sum_usec: AtomicU64,
}

impl Histogram {
    /// An empty histogram, boxed: it is a few kilobytes.
    pub fn boxed() -> Box<Histogram> {
        Box::new(Histogram {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_usec: AtomicU64::new(0),
        })
    }

    /// Records one duration, in whole microseconds as Redis measures.
    /// Only the owning thread may record (see the module comment).
    pub fn record(&self, elapsed: Duration) {
        let usec = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        bump(&self.counts[slot(usec)], 1);
        bump(&self.sum_usec, usec);
    }

    /// Forgets every sample (CONFIG RESETSTAT).
    pub fn clear(&self) {
        self.counts
            .iter()
            .for_each(|c| c.store(0, Ordering::Relaxed));
        self.sum_usec.store(0, Ordering::Relaxed);
    }
}

/// Histograms added together, for reading.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Snapshot {
    counts: Box<[u64; SLOTS]>,
    sum_usec: u64,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            counts: Box::new([0; SLOTS]),
            sum_usec: 0,
        }
    }
}

/// One reporting bucket of a [`Snapshot`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Bucket {
    /// Inclusive upper bound in microseconds.
    pub bound_usec: u64,
    /// Samples in this bucket.
    pub count: u64,
    /// Samples in this bucket and every one below it.
    pub cumulative: u64,
}

impl Snapshot {
    /// Adds `histogram`'s samples.
    pub fn add(&mut self, histogram: &Histogram) {
        for (sum, counter) in self.counts.iter_mut().zip(&histogram.counts) {
            *sum += counter.load(Ordering::Relaxed);
        }
        self.sum_usec += histogram.sum_usec.load(Ordering::Relaxed);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Sum of the samples in microseconds.
    pub fn sum_usec(&self) -> u64 {
        self.sum_usec
    }

    /// The value at `percentile` (0 to 100), in microseconds, chosen as
    /// Redis's `hdr_value_at_percentile` chooses it: the sample ranked
    /// `percentile`% of the count (rounded, at least the first), read as
    /// the highest value its counter holds — the lowest for percentile 0.
    /// 0 without samples.
    pub fn percentile(&self, percentile: f64) -> u64 {
        let wanted = ((percentile.min(100.0) / 100.0 * self.count() as f64) + 0.5) as u64;
        let mut seen = 0;
        for (slot, &count) in self.counts.iter().enumerate() {
            seen += count;
            if count > 0 && seen >= wanted.max(1) {
                let (low, high) = slot_range(slot);
                return if percentile == 0.0 { low } else { high };
            }
        }
        0
    }

    /// The reporting buckets, lowest first; samples past the last bucket
    /// are in none of them.
    pub fn buckets(&self) -> impl Iterator<Item = Bucket> + '_ {
        let mut cumulative = 0;
        self.counts[..OVERFLOW]
            .chunks(SUB_BUCKETS)
            .zip(BUCKET_BOUNDS_USEC)
            .map(move |(parts, bound_usec)| {
                let count = parts.iter().sum();
                cumulative += count;
                Bucket {
                    bound_usec,
                    count,
                    cumulative,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usec(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn snapshot_of(samples: impl IntoIterator<Item = u64>) -> Snapshot {
        let histogram = Histogram::boxed();
        samples.into_iter().for_each(|n| histogram.record(usec(n)));
        let mut snapshot = Snapshot::default();
        snapshot.add(&histogram);
        snapshot
    }

    #[test]
    fn bounds_are_the_keys_redis_reports() {
        assert_eq!(
            BUCKET_BOUNDS_USEC[..20],
            [
                1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633,
                135266, 270532, 541065
            ]
        );
        assert_eq!(BUCKET_BOUNDS_USEC[BUCKETS - 1], 34_628_173);
    }

    #[test]
    fn every_value_lands_in_a_counter_that_holds_it() {
        let mut previous_high = None;
        for value in (0..5000).chain([66, 67, 541_065, 541_066, 34_628_173]) {
            let (low, high) = slot_range(slot(value));
            assert!(low <= value && value <= high, "{value} in {low}..={high}");
            if value < 5000 {
                // Counters tile the values: each starts where the last ended.
                if let Some(prev) = previous_high.filter(|&p| p < value) {
                    assert_eq!(low, prev + 1, "gap before {value}");
                }
                previous_high = Some(high);
            }
        }
        assert_eq!(slot(34_628_174), OVERFLOW);
        assert_eq!(slot(u64::MAX), OVERFLOW);
    }

    #[test]
    fn quick_slots_are_the_slots_the_bounds_give() {
        for usec in 0..QUICK_USEC as u64 + 2 {
            assert_eq!(slot(usec), slot_by_bounds(usec), "{usec}");
        }
        assert_eq!(slot(1), SUB_BUCKETS / 2);
    }

    #[test]
    fn a_bucket_counts_exactly_the_values_up_to_its_bound() {
        for (k, &bound) in BUCKET_BOUNDS_USEC.iter().enumerate() {
            assert_eq!(slot(bound) / SUB_BUCKETS, k);
            assert_eq!(slot(bound + 1) / SUB_BUCKETS, k + 1);
        }
    }

    #[test]
    fn parts_are_at_most_a_sixteenth_of_their_values() {
        for value in [40, 100, 1000, 12_345, 400_000, 9_999_999] {
            let (low, high) = slot_range(slot(value));
            assert!((high - low) * 16 <= low, "{value}: {low}..={high}");
        }
    }

    #[test]
    fn buckets_are_cumulative_and_skip_nothing_below_the_overflow() {
        let snapshot = snapshot_of([0, 1, 2, 3, 33, 34, 50_000_000]);
        let buckets: Vec<Bucket> = snapshot.buckets().filter(|b| b.count > 0).collect();
        let keys: Vec<(u64, u64)> = buckets
            .iter()
            .map(|b| (b.bound_usec, b.cumulative))
            .collect();
        assert_eq!(keys, [(1, 2), (2, 3), (4, 4), (33, 5), (66, 6)]);
        assert_eq!(snapshot.count(), 7);
        assert_eq!(snapshot.sum_usec(), 50_000_073);
    }

    #[test]
    fn percentiles_pick_ranks_as_redis_does() {
        let snapshot = snapshot_of(1..=100);
        let within = |value: u64, truth: u64| value >= truth && value <= truth + truth / 16;
        assert!(within(snapshot.percentile(50.0), 50));
        assert!(within(snapshot.percentile(99.0), 99));
        assert!(within(snapshot.percentile(99.9), 100));
        assert_eq!(snapshot.percentile(100.0), snapshot.percentile(99.9));
        assert_eq!(snapshot.percentile(0.0), 1, "p0 reads the lowest value");
        assert_eq!(snapshot_of([7]).percentile(0.0001), 7);
        assert_eq!(Snapshot::default().percentile(50.0), 0);
    }

    #[test]
    fn merged_histograms_equal_one_that_saw_every_sample() {
        let (a, b) = (Histogram::boxed(), Histogram::boxed());
        (0..500).for_each(|n| a.record(usec(n * 7)));
        (0..300).for_each(|n| b.record(usec(n * 13)));
        let mut merged = Snapshot::default();
        merged.add(&a);
        merged.add(&b);
        let all = snapshot_of((0..500).map(|n| n * 7).chain((0..300).map(|n| n * 13)));
        assert_eq!(merged, all);
        a.clear();
        let mut after_clear = Snapshot::default();
        after_clear.add(&a);
        assert_eq!(after_clear, Snapshot::default());
    }
}

//! The time commands run at, read as seldom as the request path allows.
//!
//! Reading a clock is a vDSO call of tens of nanoseconds, and a SET used
//! to read one seven times: the wall clock for its expiry checks, for the
//! pause check and for the latency monitor, the monotonic clock twice for
//! its duration and twice more for the keys' access times. At 16
//! pipelined requests per read that was 6% of keel's CPU.
//!
//! Now a connection reads both clocks once when a batch's first command
//! is about to run ([`Now::read`]), and each command reads the monotonic
//! clock once more, as it ends ([`Now::advance`]): that reading ends its
//! duration and starts the next command's. The wall clock a command sees
//! is the batch's reading moved on by the monotonic clock, so it is as
//! fresh as a reading of its own; a wall clock stepped by NTP is followed
//! from the next batch on. Anything that waits (a flush, a blocking
//! command, a pause) ends the batch's reading: the next command reads
//! both clocks again.
//!
//! Readings are kept as nanoseconds since the batch's first, so the
//! command's duration, its wall clock and the keys' access clock are each
//! a subtraction or a division of integers: working each out from an
//! `Instant` cost three `timespec` subtractions a command, 2% of a SET.
//! The monotonic clock is read as nanoseconds too ([`monotonic_ns`]):
//! `Instant::elapsed` spent as much again checking and converting.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use keel_store::Clock;

use crate::server::unix_ms;

/// Both clocks, and the store's access clock, at one instant, moved on by
/// the monotonic clock alone.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    /// When the wall clock was read ([`monotonic_ns`]).
    anchor_ns: u64,
    /// The wall clock (Unix milliseconds) at `anchor`.
    anchor_unix_ms: u64,
    /// The store's access clock at `anchor`.
    anchor_access: Clock,
    /// Nanoseconds from `anchor` to the latest reading of the monotonic
    /// clock.
    latest_ns: u64,
}

impl Now {
    /// Reads both clocks; `store` gives the access clock's origin.
    pub fn read(store: &keel_store::Store) -> Now {
        let anchor_ns = monotonic_ns();
        Now {
            anchor_ns,
            anchor_unix_ms: unix_ms(),
            anchor_access: store.clock_at(instant_at(anchor_ns)),
            latest_ns: 0,
        }
    }

    /// The latest reading of the monotonic clock, as [`Now::advance`]
    /// takes it.
    pub fn mark(&self) -> u64 {
        self.latest_ns
    }

    /// Unix milliseconds at the latest reading.
    pub fn unix_ms(&self) -> u64 {
        self.anchor_unix_ms + self.latest_ns / 1_000_000
    }

    /// The store's access clock (LRU/LFU) at the latest reading.
    pub fn access_clock(&self) -> Clock {
        Clock {
            micros: self.anchor_access.micros + self.latest_ns / 1_000,
        }
    }

    /// Reads the monotonic clock again; returns the time since `since`, a
    /// [`Now::mark`].
    pub fn advance(&mut self, since: u64) -> Duration {
        self.latest_ns = monotonic_ns().saturating_sub(self.anchor_ns);
        Duration::from_nanos(self.latest_ns.saturating_sub(since))
    }
}

/// The monotonic clock (`CLOCK_MONOTONIC`, which `Instant` reads) in
/// nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is valid for writing; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64) * 1_000_000_000 + now.tv_nsec as u64
}

/// The `Instant` of the [`monotonic_ns`] reading `ns`.
fn instant_at(ns: u64) -> Instant {
    // An `Instant` and a reading taken together, once: both read the same
    // clock, so a reading is the instant plus the difference.
    static PAIRED: OnceLock<(Instant, u64)> = OnceLock::new();
    let (instant, paired_ns) = *PAIRED.get_or_init(|| (Instant::now(), monotonic_ns()));
    match ns.checked_sub(paired_ns) {
        Some(after) => instant + Duration::from_nanos(after),
        None => instant - Duration::from_nanos(paired_ns - ns),
    }
}

/// Sleeps until the next instant a whole number of `period`s after the
/// first call in this process. Background loops whose periods divide one
/// another (active expiry, throughput samples, the save schedule, eviction's
/// look at memory) thus wake together: one wake-up of their thread instead
/// of one each, which is most of what an idle server costs.
pub async fn sleep_until_next(period: Duration) {
    static EPOCH: OnceLock<tokio::time::Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(tokio::time::Instant::now);
    let period_ns = period.as_nanos().max(1);
    let periods = (epoch.elapsed().as_nanos() / period_ns) + 1;
    let after = Duration::from_nanos(u64::try_from(periods * period_ns).unwrap_or(u64::MAX));
    tokio::time::sleep_until(epoch + after).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_and_access_clocks_move_with_the_monotonic_clock() {
        // Read a second ago, so the next reading is past the 250 ms set.
        let a_second_ago = monotonic_ns() - 1_000_000_000;
        let mut now = Now {
            anchor_ns: a_second_ago,
            anchor_unix_ms: 1_000,
            anchor_access: Clock { micros: 7 },
            latest_ns: 0,
        };
        assert_eq!((now.unix_ms(), now.access_clock().micros), (1_000, 7));
        now.latest_ns = 250_000_000;
        assert_eq!((now.unix_ms(), now.access_clock().micros), (1_250, 250_007));
        let mark = now.mark();
        let ran = now.advance(mark);
        assert!(now.mark() >= 1_000_000_000);
        assert_eq!(ran, Duration::from_nanos(now.mark() - mark));
        assert_eq!(now.unix_ms(), 1_000 + now.mark() / 1_000_000);
    }

    #[test]
    fn a_nanosecond_reading_is_the_instant_it_was_taken_at() {
        let before = Instant::now();
        let ns = monotonic_ns();
        let after = Instant::now();
        let at = instant_at(ns);
        // The pairing's two reads are apart by the time a read takes.
        let slack = Duration::from_millis(1);
        assert!(
            before <= at + slack && at <= after,
            "{before:?} <= {at:?} <= {after:?}"
        );
        assert_eq!(instant_at(ns + 5_000) - at, Duration::from_micros(5));
        assert_eq!(at - instant_at(ns - 5_000), Duration::from_micros(5));
    }

    #[tokio::test(start_paused = true)]
    async fn loops_with_dividing_periods_wake_together() {
        let first = tokio::time::Instant::now();
        sleep_until_next(Duration::from_millis(100)).await;
        let grid = tokio::time::Instant::now();
        assert!(grid > first && grid - first <= Duration::from_millis(100));
        tokio::time::sleep(Duration::from_millis(30)).await;
        sleep_until_next(Duration::from_millis(100)).await;
        assert_eq!(
            tokio::time::Instant::now() - grid,
            Duration::from_millis(100)
        );
        sleep_until_next(Duration::from_millis(500)).await;
        let late = tokio::time::Instant::now() - grid;
        assert_eq!(late.as_millis() % 100, 0, "on the same grid: {late:?}");
    }
}

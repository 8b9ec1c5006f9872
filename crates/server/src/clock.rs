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

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use keel_store::Clock;

use crate::server::unix_ms;

/// Both clocks, and the store's access clock, at one instant, moved on by
/// the monotonic clock alone.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    /// When the wall clock was read.
    anchor: Instant,
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
        let anchor = Instant::now();
        Now {
            anchor,
            anchor_unix_ms: unix_ms(),
            anchor_access: store.clock_at(anchor),
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
        self.latest_ns = u64::try_from(self.anchor.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(self.latest_ns.saturating_sub(since))
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
        let a_second_ago = Instant::now() - Duration::from_secs(1);
        let mut now = Now {
            anchor: a_second_ago,
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

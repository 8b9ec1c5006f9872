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

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::server::unix_ms;

/// Both clocks at one instant, moved on by the monotonic clock alone.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    /// The wall clock (Unix milliseconds) at `anchor`.
    anchor_unix_ms: u64,
    /// When the wall clock was read.
    anchor: Instant,
    /// The latest reading of the monotonic clock.
    latest: Instant,
}

impl Now {
    /// Reads both clocks.
    pub fn read() -> Now {
        let anchor = Instant::now();
        Now {
            anchor_unix_ms: unix_ms(),
            anchor,
            latest: anchor,
        }
    }

    /// The latest reading of the monotonic clock.
    pub fn instant(&self) -> Instant {
        self.latest
    }

    /// Unix milliseconds at the latest reading.
    pub fn unix_ms(&self) -> u64 {
        self.anchor_unix_ms + (self.latest - self.anchor).as_millis() as u64
    }

    /// Reads the monotonic clock again; returns the time since `since`.
    pub fn advance(&mut self, since: Instant) -> Duration {
        self.latest = Instant::now();
        self.latest.saturating_duration_since(since)
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
    fn the_wall_clock_moves_with_the_monotonic_clock() {
        let start = Instant::now();
        let mut now = Now {
            anchor_unix_ms: 1_000,
            anchor: start,
            latest: start,
        };
        assert_eq!(now.unix_ms(), 1_000);
        now.latest = start + Duration::from_millis(250);
        assert_eq!(now.unix_ms(), 1_250);
        let ran = now.advance(start);
        assert_eq!(ran, now.instant() - start);
        assert_eq!(now.unix_ms(), 1_000 + ran.as_millis() as u64);
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

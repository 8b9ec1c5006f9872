//! The open-loop arrival schedule: when each request *should* be sent,
//! independent of when replies come back (see the coordinated-omission note
//! at the top of [`crate::workload`]).

use std::time::Duration;

use crate::workload::Rng;

/// How arrivals are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly spaced, with a random phase per connection so connections do
    /// not fire in lockstep.
    Uniform,
    /// Exponential gaps (a Poisson process), like independent users: bursts
    /// happen by chance and the queue sees them.
    Poisson,
}

impl Arrival {
    /// Parses `uniform` or `poisson`.
    pub fn parse(s: &str) -> Option<Arrival> {
        match s {
            "uniform" => Some(Arrival::Uniform),
            "poisson" => Some(Arrival::Poisson),
            _ => None,
        }
    }
}

/// One connection's schedule: successive intended send times, as offsets
/// from the start of the run, in nanoseconds (integers, so a long run does
/// not drift through float rounding).
#[derive(Clone, Debug)]
pub struct Schedule {
    arrival: Arrival,
    mean_gap_ns: f64,
    next_ns: u64,
}

impl Schedule {
    /// A schedule at `rate` requests per second. The first arrival falls
    /// somewhere in the first gap (uniform) or after one exponential gap
    /// (Poisson).
    pub fn new(rate: f64, arrival: Arrival, rng: &mut Rng) -> Self {
        let mean_gap_ns = 1e9 / rate.max(1e-9);
        let first = match arrival {
            Arrival::Uniform => rng.unit() * mean_gap_ns,
            Arrival::Poisson => exp_gap(mean_gap_ns, rng),
        };
        Schedule {
            arrival,
            mean_gap_ns,
            next_ns: first as u64,
        }
    }

    /// Intended send time of the next request, from the start of the run.
    pub fn peek(&self) -> Duration {
        Duration::from_nanos(self.next_ns)
    }

    /// Consumes the next intended send time and returns it.
    pub fn advance(&mut self, rng: &mut Rng) -> Duration {
        let t = self.next_ns;
        let gap = match self.arrival {
            Arrival::Uniform => self.mean_gap_ns,
            Arrival::Poisson => exp_gap(self.mean_gap_ns, rng),
        };
        // At least 1 ns apart so times are strictly increasing.
        self.next_ns += (gap as u64).max(1);
        Duration::from_nanos(t)
    }
}

fn exp_gap(mean_ns: f64, rng: &mut Rng) -> f64 {
    // 1 - u is in (0, 1], so ln is finite.
    -(1.0 - rng.unit()).ln() * mean_ns
}

/// Splits a total rate over `connections`: each gets an equal share.
pub fn per_connection_rate(total: f64, connections: usize) -> f64 {
    total / connections.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_within(rate: f64, arrival: Arrival, seed: u64, window: Duration) -> (u64, Vec<u64>) {
        let mut rng = Rng::new(seed);
        let mut s = Schedule::new(rate, arrival, &mut rng);
        let mut times = Vec::new();
        while s.peek() < window {
            times.push(s.advance(&mut rng).as_nanos() as u64);
        }
        (times.len() as u64, times)
    }

    #[test]
    fn uniform_schedule_is_evenly_spaced() {
        let (n, times) = count_within(1000.0, Arrival::Uniform, 1, Duration::from_secs(10));
        assert!((9_999..=10_000).contains(&n), "{n}");
        assert!(times[0] < 1_000_000, "first arrival within the first gap");
        for w in times.windows(2) {
            let gap = w[1] - w[0];
            assert!((999_999..=1_000_001).contains(&gap), "gap {gap}");
        }
    }

    #[test]
    fn poisson_schedule_has_the_right_rate_and_spread() {
        let rate = 500.0;
        let (n, times) = count_within(rate, Arrival::Poisson, 9, Duration::from_secs(200));
        let expect = rate * 200.0;
        // Poisson count: sd = sqrt(expect) ≈ 316; allow 5 sd.
        assert!((n as f64 - expect).abs() < 5.0 * expect.sqrt(), "{n}");
        // Exponential gaps: coefficient of variation ≈ 1.
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.03, "cv {cv}");
        assert!((mean - 2e6).abs() / 2e6 < 0.02, "mean gap {mean}");
    }

    #[test]
    fn schedule_does_not_depend_on_who_consumes_it() {
        // Two identical schedules give identical times whether read at once
        // or late: the schedule has no notion of replies.
        let mut r1 = Rng::new(4);
        let mut r2 = Rng::new(4);
        let mut a = Schedule::new(100.0, Arrival::Poisson, &mut r1);
        let mut b = Schedule::new(100.0, Arrival::Poisson, &mut r2);
        let ta: Vec<_> = (0..100).map(|_| a.advance(&mut r1)).collect();
        let tb: Vec<_> = (0..100).map(|_| b.advance(&mut r2)).collect();
        assert_eq!(ta, tb);
        assert!(ta.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn rate_is_split_over_connections() {
        assert_eq!(per_connection_rate(38_000.0, 2000), 19.0);
        assert_eq!(per_connection_rate(10.0, 0), 10.0);
    }
}

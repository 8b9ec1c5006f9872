//! Scaling a sample up to the whole keyspace, with a 95% interval (the
//! formulas are in the crate documentation). Exact walks go through the
//! same code with n = N, where every interval collapses to the value.

/// How the sample was drawn; decides the finite-population correction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// Every key was inspected: figures are exact.
    Exhaustive,
    /// A uniform subset without replacement (from a SCAN walk).
    WithoutReplacement,
    /// Independent draws with replacement (`RANDOMKEY`).
    WithReplacement,
}

/// z for a two-sided 95% normal interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A scaled-up figure and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Point estimate.
    pub value: f64,
    /// Lower end of the 95% interval.
    pub low: f64,
    /// Upper end of the 95% interval.
    pub high: f64,
}

impl Estimate {
    /// An exact figure.
    pub fn exact(value: f64) -> Estimate {
        Estimate {
            value,
            low: value,
            high: value,
        }
    }

    /// Half the interval's width: the "±" printed beside the value.
    pub fn margin(&self) -> f64 {
        (self.high - self.low) / 2.0
    }

    fn around(value: f64, se: f64, min: f64, max: f64) -> Estimate {
        Estimate {
            value,
            low: (value - Z95 * se).clamp(min, max),
            high: (value + Z95 * se).clamp(min, max),
        }
    }
}

/// The sample as a whole: its size, the population it was drawn from, and
/// the sums over all sampled keys that every pattern's share needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Keys inspected (n).
    pub n: u64,
    /// Keys in the population (N).
    pub population: u64,
    /// How the keys were drawn.
    pub draw: Draw,
    /// Σy over the sample: bytes of all sampled keys.
    pub sum_bytes: f64,
    /// Σy² over the sample.
    pub sum_bytes_sq: f64,
}

/// Per-pattern sums over the sampled keys: k, Σy and Σy² of its keys.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PatternSums {
    /// Sampled keys in the pattern (k).
    pub keys: u64,
    /// Σ bytes of those keys.
    pub bytes: f64,
    /// Σ bytes² of those keys.
    pub bytes_sq: f64,
}

impl Sample {
    fn exact(&self) -> bool {
        self.draw == Draw::Exhaustive
            || self.n >= self.population && self.draw != Draw::WithReplacement
    }

    /// Finite-population correction f.
    fn fpc(&self) -> f64 {
        match self.draw {
            Draw::Exhaustive => 0.0,
            Draw::WithReplacement => 1.0,
            Draw::WithoutReplacement if self.population > 1 => {
                (self.population.saturating_sub(self.n)) as f64 / (self.population - 1) as f64
            }
            Draw::WithoutReplacement => 0.0,
        }
    }

    /// N/n: how many keys of the keyspace each sampled key stands for.
    pub fn scale(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.population as f64 / self.n as f64
        }
    }

    /// Estimated number of keys in a pattern.
    pub fn keys(&self, p: &PatternSums) -> Estimate {
        let big_n = self.population as f64;
        if self.exact() {
            return Estimate::exact(p.keys as f64 * self.scale());
        }
        let n = self.n as f64;
        let phat = p.keys as f64 / n;
        let se = big_n * (phat * (1.0 - phat) / n * self.fpc()).sqrt();
        Estimate::around(big_n * phat, se, p.keys as f64, big_n)
    }

    /// Estimated total bytes of a pattern.
    pub fn bytes(&self, p: &PatternSums) -> Estimate {
        let big_n = self.population as f64;
        if self.exact() {
            return Estimate::exact(p.bytes * self.scale());
        }
        let n = self.n as f64;
        let mean = p.bytes / n;
        let var = variance(p.bytes, p.bytes_sq, n);
        let se = big_n * (var / n * self.fpc()).sqrt();
        Estimate::around(big_n * mean, se, p.bytes, f64::INFINITY)
    }

    /// Estimated share (0–1) of all bytes held by a pattern.
    pub fn share(&self, p: &PatternSums) -> Estimate {
        if self.sum_bytes <= 0.0 {
            return Estimate::exact(0.0);
        }
        let r = p.bytes / self.sum_bytes;
        if self.exact() {
            return Estimate::exact(r);
        }
        let n = self.n as f64;
        // Σd² with d_i = z_i − R·y_i, z_i = y_i inside the pattern, 0 outside.
        let sum_d_sq = ((1.0 - 2.0 * r) * p.bytes_sq + r * r * self.sum_bytes_sq).max(0.0);
        let var_d = if n > 1.0 { sum_d_sq / (n - 1.0) } else { 0.0 };
        let mean_y = self.sum_bytes / n;
        let se = (self.fpc() * var_d / n).sqrt() / mean_y;
        Estimate::around(r, se, 0.0, 1.0)
    }

    /// Estimated total bytes of the keyspace.
    pub fn total_bytes(&self) -> Estimate {
        self.bytes(&PatternSums {
            keys: self.n,
            bytes: self.sum_bytes,
            bytes_sq: self.sum_bytes_sq,
        })
    }
}

/// Unbiased sample variance of z over n draws from Σz and Σz².
fn variance(sum: f64, sum_sq: f64, n: f64) -> f64 {
    if n < 2.0 {
        return 0.0;
    }
    ((sum_sq - sum * sum / n) / (n - 1.0)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(values: &[f64]) -> PatternSums {
        PatternSums {
            keys: values.len() as u64,
            bytes: values.iter().sum(),
            bytes_sq: values.iter().map(|v| v * v).sum(),
        }
    }

    #[test]
    fn exhaustive_walk_is_exact() {
        let s = Sample {
            n: 10,
            population: 10,
            draw: Draw::Exhaustive,
            sum_bytes: 1000.0,
            sum_bytes_sq: 0.0,
        };
        let p = sums(&[100.0, 150.0]);
        assert_eq!(s.keys(&p), Estimate::exact(2.0));
        assert_eq!(s.bytes(&p), Estimate::exact(250.0));
        assert_eq!(s.share(&p), Estimate::exact(0.25));
    }

    #[test]
    fn proportion_interval_matches_the_textbook() {
        // 1000 of 1,000,000 sampled without replacement, 300 in the pattern.
        let s = Sample {
            n: 1000,
            population: 1_000_000,
            draw: Draw::WithoutReplacement,
            sum_bytes: 0.0,
            sum_bytes_sq: 0.0,
        };
        let p = PatternSums {
            keys: 300,
            ..Default::default()
        };
        let e = s.keys(&p);
        assert!((e.value - 300_000.0).abs() < 1e-6);
        let f = (1_000_000.0 - 1000.0) / 999_999.0;
        let se = 1_000_000.0 * (0.3f64 * 0.7 / 1000.0 * f).sqrt();
        assert!((e.margin() - Z95 * se).abs() < 1e-6, "{e:?}");
        // About ±28,400 keys, i.e. ±2.8 points of share.
        assert!((e.margin() - 28_388.0).abs() < 50.0, "{e:?}");
        // With replacement (RANDOMKEY) the correction is 1: slightly wider.
        let r = Sample {
            draw: Draw::WithReplacement,
            ..s
        };
        assert!(r.keys(&p).margin() > e.margin());
    }

    #[test]
    fn bytes_and_share_intervals() {
        // Sample of 4 keys out of 400: pattern keys 100 and 300 bytes,
        // others 50 and 50.
        let all = [100.0, 300.0, 50.0, 50.0];
        let s = Sample {
            n: 4,
            population: 400,
            draw: Draw::WithoutReplacement,
            sum_bytes: all.iter().sum(),
            sum_bytes_sq: all.iter().map(|v| v * v).sum(),
        };
        let p = sums(&[100.0, 300.0]);
        let b = s.bytes(&p);
        assert!((b.value - 40_000.0).abs() < 1e-9);
        // z = [100, 300, 0, 0]: mean 100, s² = (100²+300² − 400²/4)/3 = 20000.
        let f = 396.0 / 399.0;
        let se = 400.0 * (20_000.0f64 / 4.0 * f).sqrt();
        assert!((b.high - b.value - Z95 * se).abs() < 1e-6, "{b:?}");
        // The low end is clamped to the bytes actually seen.
        assert_eq!(b.low, 400.0);
        let sh = s.share(&p);
        assert!((sh.value - 0.8).abs() < 1e-12);
        // d = z − 0.8·y = [20, 60, −40, −40]: Σd² = 400+3600+1600+1600 = 7200.
        let se = (f * (7200.0 / 3.0) / 4.0).sqrt() / 125.0;
        assert!((sh.value - sh.low - Z95 * se).abs() < 1e-9, "{sh:?}");
        assert!(sh.high <= 1.0 && sh.low >= 0.0);
        // The keyspace total is estimated by the same formula.
        assert!((s.total_bytes().value - 50_000.0).abs() < 1e-9);
    }

    #[test]
    fn interval_covers_truth_about_95_percent() {
        // Deterministic simulation: population of 10,000 keys, 20% in the
        // pattern with 1000-byte values, others 100 bytes; 2,000 samples
        // of 200 keys. Coverage of the share interval must be near 95%.
        let pop: Vec<(bool, f64)> = (0..10_000)
            .map(|i| {
                if i % 5 == 0 {
                    (true, 1000.0)
                } else {
                    (false, 100.0)
                }
            })
            .collect();
        let truth = 2000.0 * 1000.0 / (2000.0 * 1000.0 + 8000.0 * 100.0);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut covered = 0;
        let trials = 2000;
        for _ in 0..trials {
            let mut idx: Vec<usize> = (0..pop.len()).collect();
            for i in 0..200 {
                let j = i + (next() as usize) % (pop.len() - i);
                idx.swap(i, j);
            }
            let picked: Vec<(bool, f64)> = idx[..200].iter().map(|&i| pop[i]).collect();
            let s = Sample {
                n: 200,
                population: 10_000,
                draw: Draw::WithoutReplacement,
                sum_bytes: picked.iter().map(|p| p.1).sum(),
                sum_bytes_sq: picked.iter().map(|p| p.1 * p.1).sum(),
            };
            let inp: Vec<f64> = picked.iter().filter(|p| p.0).map(|p| p.1).collect();
            let e = s.share(&sums(&inp));
            if e.low <= truth && truth <= e.high {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        assert!((0.92..=0.98).contains(&rate), "coverage {rate}");
    }
}

//! Progress bar with ETA on stderr: a walk of millions of keys at a limited
//! rate takes minutes, and the operator should know how many.
//!
//! On a terminal it redraws one line; otherwise (logs, CI) it prints a line
//! every 10% so the log stays short.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Tracks keys done against an expected total and draws the bar.
pub struct Progress {
    label: &'static str,
    total: u64,
    done: u64,
    start: Instant,
    last_draw: Option<Instant>,
    last_decile: u64,
    tty: bool,
    enabled: bool,
}

impl Progress {
    /// A bar for `total` keys (an estimate, e.g. DBSIZE; the bar caps at
    /// 100%). `enabled: false` draws nothing (`--quiet`, or output piped
    /// into another tool with progress disabled).
    pub fn new(label: &'static str, total: u64, enabled: bool) -> Progress {
        Progress {
            label,
            total,
            done: 0,
            start: Instant::now(),
            last_draw: None,
            last_decile: 0,
            tty: std::io::stderr().is_terminal(),
            enabled,
        }
    }

    /// Records `n` more keys and redraws at most ten times a second.
    pub fn add(&mut self, n: u64) {
        self.done += n;
        if !self.enabled {
            return;
        }
        if self.tty {
            let now = Instant::now();
            let due = match self.last_draw {
                None => true,
                Some(t) => now - t >= Duration::from_millis(100),
            };
            if due {
                self.last_draw = Some(now);
                eprint!("\r{}", self.line());
                let _ = std::io::stderr().flush();
            }
        } else if let Some(decile) = (self.done * 10).checked_div(self.total) {
            let decile = decile.min(10);
            if decile > self.last_decile {
                self.last_decile = decile;
                eprintln!("{}", self.line());
            }
        }
    }

    /// Keys recorded so far.
    pub fn done(&self) -> u64 {
        self.done
    }

    /// Clears the bar and prints the final count and rate.
    pub fn finish(&mut self) {
        if !self.enabled {
            return;
        }
        let secs = self.start.elapsed().as_secs_f64();
        let rate = if secs > 0.0 {
            self.done as f64 / secs
        } else {
            0.0
        };
        if self.tty {
            eprint!("\r\x1b[2K");
        }
        eprintln!(
            "{}: {} keys in {:.1} s ({:.0} keys/s)",
            self.label, self.done, secs, rate
        );
    }

    fn line(&self) -> String {
        const WIDTH: u64 = 30;
        let secs = self.start.elapsed().as_secs_f64();
        let rate = if secs > 0.0 {
            self.done as f64 / secs
        } else {
            0.0
        };
        let frac = if self.total > 0 {
            (self.done as f64 / self.total as f64).min(1.0)
        } else {
            0.0
        };
        let filled = (frac * WIDTH as f64) as u64;
        let bar: String = (0..WIDTH)
            .map(|i| if i < filled { '#' } else { '.' })
            .collect();
        let eta = if rate > 0.0 && self.total > self.done {
            let left = (self.total - self.done) as f64 / rate;
            format!("ETA {}:{:02}", left as u64 / 60, left as u64 % 60)
        } else {
            "ETA -".to_string()
        };
        format!(
            "{} [{bar}] {:>3.0}% {}/{} keys {:.0} keys/s {eta}",
            self.label,
            frac * 100.0,
            self.done,
            self.total,
            rate
        )
    }
}

//! Per-key access tracking for OBJECT IDLETIME / OBJECT FREQ and the
//! eviction policies that read it.
//!
//! Each entry carries one 64-bit word that a reader updates with a relaxed
//! atomic store, so recording an access never needs the shard's write lock.
//! Its meaning follows the maxmemory policy, as in Redis: under LRU-style
//! policies it is the time of the last access; under LFU policies it is
//! Redis's logarithmic counter (low 8 bits) with the time of the last
//! access, which is also its last decay (high 56 bits). Switching policy at
//! run time reinterprets the word; like Redis, values adjust over time.
//!
//! Redis keeps LRU time in seconds and LFU time in minutes, in 24 bits.
//! keel keeps microseconds since the store started, which never wrap: its
//! eviction runs in the background, after the writes, so it compares keys
//! written moments apart, and a coarse clock would make the newest key tie
//! with older ones. The word stays eight bytes: it opens the entry's packed
//! block (see `entry.rs`), aligned for atomic access, and four bytes would
//! not move a typical small key (11-byte key, 64-byte value, with or
//! without a TTL) into a smaller allocator size class.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

/// The maxmemory policies Redis names, with their config spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Policy {
    /// Writes fail with OOM at the limit.
    NoEviction,
    /// Least recently used among all keys.
    AllKeysLru,
    /// Least frequently used among all keys.
    AllKeysLfu,
    /// Any key.
    AllKeysRandom,
    /// Least recently used among keys with a TTL.
    VolatileLru,
    /// Least frequently used among keys with a TTL.
    VolatileLfu,
    /// Any key with a TTL.
    VolatileRandom,
    /// The key with the nearest expiry.
    VolatileTtl,
}

impl Policy {
    const ALL: [Policy; 8] = [
        Policy::NoEviction,
        Policy::AllKeysLru,
        Policy::AllKeysLfu,
        Policy::AllKeysRandom,
        Policy::VolatileLru,
        Policy::VolatileLfu,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
    ];

    /// The name used in `maxmemory-policy`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::NoEviction => "noeviction",
            Policy::AllKeysLru => "allkeys-lru",
            Policy::AllKeysLfu => "allkeys-lfu",
            Policy::AllKeysRandom => "allkeys-random",
            Policy::VolatileLru => "volatile-lru",
            Policy::VolatileLfu => "volatile-lfu",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
        }
    }

    /// Parses a `maxmemory-policy` value, case-insensitively as Redis does.
    pub fn parse(name: &str) -> Option<Policy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// True for the LFU policies, which track frequency instead of recency.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    /// True where Redis keeps per-key recency or frequency, which rules out
    /// sharing small integer objects (visible through OBJECT REFCOUNT).
    pub fn tracks_keys(self) -> bool {
        matches!(
            self,
            Policy::AllKeysLru | Policy::VolatileLru | Policy::AllKeysLfu | Policy::VolatileLfu
        )
    }
}

/// Redis's LFU_INIT_VAL: new keys start here so they are not evicted at
/// once for lack of history.
const LFU_INIT: u32 = 5;

/// The settings access tracking reads on every access; atomics so CONFIG
/// SET takes effect without locking the keyspace.
#[derive(Debug)]
pub struct AccessConfig {
    policy: AtomicU8,
    lfu_log_factor: AtomicU32,
    lfu_decay_minutes: AtomicU32,
}

impl Default for AccessConfig {
    fn default() -> Self {
        AccessConfig {
            policy: AtomicU8::new(Policy::NoEviction as u8),
            lfu_log_factor: AtomicU32::new(10),
            lfu_decay_minutes: AtomicU32::new(1),
        }
    }
}

impl AccessConfig {
    /// The current maxmemory policy.
    pub fn policy(&self) -> Policy {
        Policy::ALL[self.policy.load(Ordering::Relaxed) as usize]
    }

    /// Changes the maxmemory policy.
    pub fn set_policy(&self, policy: Policy) {
        self.policy.store(policy as u8, Ordering::Relaxed);
    }

    /// `lfu-log-factor`: how many accesses each counter step needs.
    pub fn lfu_log_factor(&self) -> u32 {
        self.lfu_log_factor.load(Ordering::Relaxed)
    }

    /// Sets `lfu-log-factor`.
    pub fn set_lfu_log_factor(&self, v: u32) {
        self.lfu_log_factor.store(v, Ordering::Relaxed);
    }

    /// `lfu-decay-time`: minutes per counter decrement when idle.
    pub fn lfu_decay_minutes(&self) -> u32 {
        self.lfu_decay_minutes.load(Ordering::Relaxed)
    }

    /// Sets `lfu-decay-time`.
    pub fn set_lfu_decay_minutes(&self, v: u32) {
        self.lfu_decay_minutes.store(v, Ordering::Relaxed);
    }
}

/// A point in time as access tracking sees it.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Microseconds since the store started.
    pub micros: u64,
}

/// Bits of the LFU word holding the time (the low 8 hold the counter).
const LFU_TIME_MAX: u64 = (1 << 56) - 1;
/// Microseconds per minute, the unit of `lfu-decay-time`.
const MICROS_PER_MINUTE: u64 = 60_000_000;

/// The per-entry access word. Transparent so an entry's packed block can
/// hold it at a fixed, aligned offset.
#[derive(Debug)]
#[repr(transparent)]
pub struct Access(AtomicU64);

impl Access {
    /// The word for a key created now.
    pub fn new(config: &AccessConfig, clock: Clock) -> Access {
        Access(AtomicU64::new(initial(config, clock)))
    }

    /// Records an access: recency under LRU policies, a probabilistic
    /// logarithmic increment under LFU ones.
    pub fn touch(&self, config: &AccessConfig, clock: Clock) {
        let word = if config.policy().is_lfu() {
            let counter = self.decayed_counter(config, clock);
            lfu_word(clock, lfu_increment(counter, config.lfu_log_factor()))
        } else {
            clock.micros
        };
        self.0.store(word, Ordering::Relaxed);
    }

    /// A new word with this one's history, for an entry rebuilt in a new
    /// block or given a new key (RENAME keeps the key's history).
    pub(crate) fn duplicate(&self) -> Access {
        Access(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }

    /// Microseconds since the last access (under non-LFU policies).
    pub fn idle_micros(&self, clock: Clock) -> u64 {
        clock.micros.saturating_sub(self.0.load(Ordering::Relaxed))
    }

    /// Seconds since the last access (under non-LFU policies), as OBJECT
    /// IDLETIME reports it.
    pub fn idle_seconds(&self, clock: Clock) -> u64 {
        self.idle_micros(clock) / 1_000_000
    }

    /// Microseconds since the last access under LFU policies.
    fn lfu_idle(&self, clock: Clock) -> u64 {
        let last = self.0.load(Ordering::Relaxed) >> 8;
        (clock.micros & LFU_TIME_MAX).saturating_sub(last)
    }

    /// The LFU counter after applying the decay due since its last
    /// access, as OBJECT FREQ reports it.
    pub fn decayed_counter(&self, config: &AccessConfig, clock: Clock) -> u32 {
        let counter = (self.0.load(Ordering::Relaxed) & 0xff) as u32;
        let elapsed_minutes = self.lfu_idle(clock) / MICROS_PER_MINUTE;
        let periods = match config.lfu_decay_minutes() {
            0 => 0,
            decay => elapsed_minutes / decay as u64,
        };
        counter.saturating_sub(periods.min(u32::MAX as u64) as u32)
    }

    /// How good an eviction victim this key is under LFU (lower is
    /// better): lowest decayed counter first, and among equal counters the
    /// longest idle.
    pub fn lfu_rank(&self, config: &AccessConfig, clock: Clock) -> u64 {
        let counter = self.decayed_counter(config, clock) as u64;
        (counter << 56) | (LFU_TIME_MAX - self.lfu_idle(clock).min(LFU_TIME_MAX))
    }
}

fn lfu_word(clock: Clock, counter: u32) -> u64 {
    ((clock.micros & LFU_TIME_MAX) << 8) | counter as u64
}

fn initial(config: &AccessConfig, clock: Clock) -> u64 {
    if config.policy().is_lfu() {
        lfu_word(clock, LFU_INIT)
    } else {
        clock.micros
    }
}

/// Redis's LFULogIncr: the counter grows with probability
/// 1 / ((counter - LFU_INIT) * log_factor + 1), saturating at 255.
fn lfu_increment(counter: u32, log_factor: u32) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let base = counter.saturating_sub(LFU_INIT) as f64;
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if rand::random::<f64>() < p {
        counter + 1
    } else {
        counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(seconds: u64) -> Clock {
        Clock {
            micros: seconds * 1_000_000,
        }
    }

    #[test]
    fn lru_idle_time() {
        let config = AccessConfig::default();
        let access = Access::new(&config, clock(100));
        assert_eq!(access.idle_seconds(clock(130)), 30);
        access.touch(&config, clock(130));
        assert_eq!(access.idle_seconds(clock(130)), 0);
    }

    #[test]
    fn lfu_counter_grows_logarithmically_and_decays() {
        let config = AccessConfig::default();
        config.set_policy(Policy::AllKeysLfu);
        let access = Access::new(&config, clock(0));
        assert_eq!(access.decayed_counter(&config, clock(0)), LFU_INIT);
        for _ in 0..1000 {
            access.touch(&config, clock(0));
        }
        let hot = access.decayed_counter(&config, clock(0));
        assert!(
            hot > LFU_INIT && hot < 40,
            "1000 hits give a modest counter, got {hot}"
        );
        assert_eq!(access.decayed_counter(&config, clock(60 * 3)), hot - 3);
    }

    #[test]
    fn policy_names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(p.name()), Some(p));
        }
        assert_eq!(Policy::parse("ALLKEYS-LRU"), Some(Policy::AllKeysLru));
        assert_eq!(Policy::parse("lru"), None);
    }
}

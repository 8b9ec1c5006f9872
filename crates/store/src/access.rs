//! Per-key access tracking for OBJECT IDLETIME / OBJECT FREQ and the
//! eviction policies that read it.
//!
//! Each entry carries one 64-bit word that a reader updates with a relaxed
//! atomic store, so recording an access never needs the shard's write lock.
//! Its meaning follows the maxmemory policy, as in Redis: under LRU-style
//! policies it is the time of the last access; under LFU policies it is
//! Redis's logarithmic counter (low 8 bits) with the time of the last
//! access, which is also its last decay (high 56 bits); under keel's
//! `allkeys-s3fifo` it holds the time of the last access as LRU does, with
//! the S3-FIFO state (see `s3fifo.rs`) in its top 16 bits. Switching
//! between LRU and LFU reinterprets the word; like Redis, values adjust
//! over time (and S3-FIFO restarts its queues).
//!
//! Redis keeps LRU time in seconds and LFU time in minutes, in 24 bits.
//! keel keeps microseconds since the store started (48 bits: nine years of
//! uptime before they wrap): its
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
    /// keel's own: S3-FIFO among all keys (see `s3fifo.rs`), which keeps
    /// more of a skewed or scan-polluted working set than LRU.
    AllKeysS3Fifo,
}

impl Policy {
    const ALL: [Policy; 9] = [
        Policy::NoEviction,
        Policy::AllKeysLru,
        Policy::AllKeysLfu,
        Policy::AllKeysRandom,
        Policy::VolatileLru,
        Policy::VolatileLfu,
        Policy::VolatileRandom,
        Policy::VolatileTtl,
        Policy::AllKeysS3Fifo,
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
            Policy::AllKeysS3Fifo => "allkeys-s3fifo",
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

    /// True where per-key recency or frequency is kept, which (as in
    /// Redis) rules out sharing small integer objects (visible through
    /// OBJECT REFCOUNT).
    pub fn tracks_keys(self) -> bool {
        matches!(
            self,
            Policy::AllKeysLru
                | Policy::VolatileLru
                | Policy::AllKeysLfu
                | Policy::VolatileLfu
                | Policy::AllKeysS3Fifo
        )
    }

    /// The default: keel's own policy, since a cache that refuses writes
    /// when full (Redis's `noeviction`) is rarely what a cache wants.
    pub const DEFAULT: Policy = Policy::AllKeysS3Fifo;
}

/// Redis's LFU_INIT_VAL: new keys start here so they are not evicted at
/// once for lack of history.
const LFU_INIT: u32 = 5;

/// The settings access tracking reads on every access; atomics so CONFIG
/// SET takes effect without locking the keyspace.
#[derive(Debug)]
pub struct AccessConfig {
    policy: AtomicU8,
    /// Bumped by every policy change, so each shard can tell that its
    /// S3-FIFO queues predate the current policy and must restart.
    policy_epoch: AtomicU32,
    lfu_log_factor: AtomicU32,
    lfu_decay_minutes: AtomicU32,
}

impl Default for AccessConfig {
    fn default() -> Self {
        AccessConfig {
            policy: AtomicU8::new(Policy::DEFAULT as u8),
            policy_epoch: AtomicU32::new(0),
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
        if self.policy.swap(policy as u8, Ordering::Relaxed) != policy as u8 {
            self.policy_epoch.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// While the policy is `allkeys-s3fifo`, the number of the policy
    /// change that selected it: the S3-FIFO queues a shard keeps are valid
    /// only for that epoch.
    pub fn s3fifo_epoch(&self) -> Option<u32> {
        (self.policy() == Policy::AllKeysS3Fifo).then(|| self.policy_epoch.load(Ordering::Relaxed))
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
        let word = match config.policy() {
            p if p.is_lfu() => {
                let counter = self.decayed_counter(config, clock);
                lfu_word(clock, lfu_increment(counter, config.lfu_log_factor()))
            }
            Policy::AllKeysS3Fifo => s3fifo_word(clock, counted(self.0.load(Ordering::Relaxed))),
            _ => clock.micros & ACCESS_TIME,
        };
        self.0.store(word, Ordering::Relaxed);
    }

    /// A new word with this one's history, for an entry rebuilt in a new
    /// block or given a new key (RENAME keeps the key's history).
    pub(crate) fn duplicate(&self) -> Access {
        Access(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }

    /// Microseconds since the last access (under non-LFU policies). The
    /// time wraps like Redis's LRU clock, so a key restored with an idle
    /// time longer than the uptime (RESTORE IDLETIME) reads it back; a
    /// time just ahead of `clock` (a touch racing this read) reads as 0.
    pub fn idle_micros(&self, clock: Clock) -> u64 {
        let last = self.0.load(Ordering::Relaxed) & ACCESS_TIME;
        match clock.micros.wrapping_sub(last) & ACCESS_TIME {
            idle if idle > MAX_IDLE_MICROS => 0,
            idle => idle,
        }
    }

    /// Gives a key the history RESTORE's IDLETIME or FREQ sets, as Redis's
    /// `objectSetLRUOrLFU`: under an LFU policy the frequency counter (if
    /// given), under the others the idle time in seconds (if given, at
    /// most about four years); the other one is ignored.
    pub fn restore(
        &self,
        config: &AccessConfig,
        clock: Clock,
        idle_seconds: Option<u64>,
        lfu_counter: Option<u8>,
    ) {
        if config.policy().is_lfu() {
            if let Some(counter) = lfu_counter {
                self.0
                    .store(lfu_word(clock, counter as u32), Ordering::Relaxed);
            }
        } else if let Some(seconds) = idle_seconds {
            let idle = seconds.saturating_mul(1_000_000).min(MAX_IDLE_MICROS);
            let time = clock.micros.wrapping_sub(idle) & ACCESS_TIME;
            let state = self.0.load(Ordering::Relaxed) & S3FIFO_STATE;
            self.0.store(time | state, Ordering::Relaxed);
        }
    }

    /// Seconds since the last access (under non-LFU policies), as OBJECT
    /// IDLETIME reports it.
    pub fn idle_seconds(&self, clock: Clock) -> u64 {
        self.idle_micros(clock) / 1_000_000
    }

    /// S3-FIFO: accesses counted since the key was queued or last passed
    /// over (0 to 3).
    pub(crate) fn s3fifo_freq(&self) -> u64 {
        (self.0.load(Ordering::Relaxed) & S3FIFO_FREQ) >> S3FIFO_FREQ_SHIFT
    }

    /// S3-FIFO: true once the key is in the main queue.
    pub(crate) fn s3fifo_in_main(&self) -> bool {
        self.0.load(Ordering::Relaxed) & S3FIFO_MAIN != 0
    }

    /// S3-FIFO: the tag that tells this key's place in the small queue
    /// from an older one left by a key that had the same slot.
    pub(crate) fn s3fifo_tag(&self) -> u8 {
        (self.0.load(Ordering::Relaxed) >> S3FIFO_TAG_SHIFT) as u8
    }

    /// S3-FIFO: sets the queue state, keeping the time of the last access.
    /// Called under the shard's write lock, so no reader's touch races
    /// with it.
    pub(crate) fn set_s3fifo_state(&self, main: bool, tag: u8, freq: u64) {
        let time = self.0.load(Ordering::Relaxed) & ACCESS_TIME;
        let main = if main { S3FIFO_MAIN } else { 0 };
        let tag = (tag as u64) << S3FIFO_TAG_SHIFT;
        let freq = freq.min(3) << S3FIFO_FREQ_SHIFT;
        self.0.store(time | main | tag | freq, Ordering::Relaxed);
    }

    /// S3-FIFO: a key queued under another policy's word, now counted as
    /// in the main queue with no accesses and last used `clock`.
    pub(crate) fn restart_s3fifo(&self, clock: Clock) {
        self.0
            .store(s3fifo_word(clock, S3FIFO_MAIN), Ordering::Relaxed);
    }

    /// S3-FIFO: a value overwritten in place keeps its key's queue state,
    /// and the write counts as an access, as a read would.
    pub(crate) fn inherit_s3fifo(&self, old: &Access) {
        let time = self.0.load(Ordering::Relaxed) & ACCESS_TIME;
        self.0.store(
            time | counted(old.0.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
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

/// The time of the last access under LRU-style policies and S3-FIFO:
/// microseconds in the low 48 bits (nine years of uptime). S3-FIFO keeps
/// its state above them, so switching between the two keeps idle times.
const ACCESS_TIME: u64 = (1 << 48) - 1;
/// S3-FIFO: the access count (0 to 3).
const S3FIFO_FREQ_SHIFT: u32 = 48;
const S3FIFO_FREQ: u64 = 0b11 << S3FIFO_FREQ_SHIFT;
/// S3-FIFO: set once the key is in the main queue.
const S3FIFO_MAIN: u64 = 1 << 50;
/// S3-FIFO: the small-queue tag (the top byte).
const S3FIFO_TAG_SHIFT: u32 = 56;
const S3FIFO_STATE: u64 = !ACCESS_TIME;
/// The longest idle time kept: half the wrapping access time's range, so a
/// time ahead of the clock is told from one long past.
const MAX_IDLE_MICROS: u64 = ACCESS_TIME / 2;

fn s3fifo_word(clock: Clock, state: u64) -> u64 {
    (clock.micros & ACCESS_TIME) | state
}

/// The S3-FIFO state of `word` with one more access counted (at most 3).
fn counted(word: u64) -> u64 {
    let state = word & S3FIFO_STATE;
    if state & S3FIFO_FREQ == S3FIFO_FREQ {
        state
    } else {
        state + (1 << S3FIFO_FREQ_SHIFT)
    }
}

fn lfu_word(clock: Clock, counter: u32) -> u64 {
    ((clock.micros & LFU_TIME_MAX) << 8) | counter as u64
}

fn initial(config: &AccessConfig, clock: Clock) -> u64 {
    match config.policy() {
        p if p.is_lfu() => lfu_word(clock, LFU_INIT),
        // Under S3-FIFO too: its state bits start clear, and the shard
        // queues the key when it is inserted (`s3fifo.rs`).
        _ => clock.micros & ACCESS_TIME,
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
    fn restore_sets_idle_time_or_frequency_by_policy() {
        let config = AccessConfig::default();
        config.set_policy(Policy::AllKeysLru);
        let access = Access::new(&config, clock(5));
        access.restore(&config, clock(5), Some(1000), Some(7));
        assert_eq!(
            access.idle_seconds(clock(5)),
            1000,
            "longer than the uptime"
        );
        assert_eq!(access.idle_seconds(clock(6)), 1001);
        config.set_policy(Policy::AllKeysLfu);
        access.restore(&config, clock(6), Some(1000), Some(7));
        assert_eq!(access.decayed_counter(&config, clock(6)), 7);
        access.restore(&config, clock(6), Some(3), None);
        assert_eq!(
            access.decayed_counter(&config, clock(6)),
            7,
            "idle time ignored"
        );
    }

    #[test]
    fn idle_time_under_lru_and_s3fifo() {
        for policy in [Policy::AllKeysLru, Policy::AllKeysS3Fifo] {
            let config = AccessConfig::default();
            config.set_policy(policy);
            let access = Access::new(&config, clock(100));
            assert_eq!(access.idle_seconds(clock(130)), 30);
            access.touch(&config, clock(130));
            assert_eq!(access.idle_seconds(clock(130)), 0);
            // The other policy reads the same idle time.
            let other = match policy {
                Policy::AllKeysLru => Policy::AllKeysS3Fifo,
                _ => Policy::AllKeysLru,
            };
            config.set_policy(other);
            assert_eq!(access.idle_seconds(clock(140)), 10);
        }
    }

    #[test]
    fn s3fifo_counts_accesses_up_to_three_and_keeps_its_state() {
        let config = AccessConfig::default();
        config.set_policy(Policy::AllKeysS3Fifo);
        let access = Access::new(&config, clock(1));
        assert_eq!(access.s3fifo_freq(), 0);
        assert!(!access.s3fifo_in_main());
        access.set_s3fifo_state(false, 0xab, 0);
        for expected in [1, 2, 3, 3] {
            access.touch(&config, clock(2));
            assert_eq!(access.s3fifo_freq(), expected);
        }
        assert_eq!(access.s3fifo_tag(), 0xab);
        access.set_s3fifo_state(true, 0xab, 1);
        let overwritten = Access::new(&config, clock(3));
        overwritten.inherit_s3fifo(&access);
        assert!(overwritten.s3fifo_in_main());
        assert_eq!(overwritten.s3fifo_tag(), 0xab);
        assert_eq!(overwritten.s3fifo_freq(), 2);
        assert_eq!(overwritten.idle_seconds(clock(3)), 0);
    }

    #[test]
    fn policy_changes_move_the_epoch() {
        let config = AccessConfig::default();
        let first = config.s3fifo_epoch().expect("s3fifo is the default");
        config.set_policy(Policy::AllKeysLru);
        assert_eq!(config.s3fifo_epoch(), None);
        config.set_policy(Policy::AllKeysS3Fifo);
        assert_ne!(config.s3fifo_epoch(), Some(first));
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

//! The load model: what each request is (command, key, value, TTL) and how
//! often each kind is sent.
//!
//! # Coordinated omission, and why the open loop exists
//!
//! A *closed-loop* client (redis-benchmark, memtier, most application
//! benchmarks) sends a request, waits for the reply, then sends the next one.
//! When the server stalls for one second, such a client simply stops asking:
//! it records *one* slow request and then carries on, so the stall costs one
//! sample out of thousands and the p99 hardly moves. Real clients do not
//! coordinate with the server like that: web workers keep arriving at their
//! own pace, and every one that arrives during the stall waits for it. The
//! benchmark has "coordinated" with the server and omitted exactly the
//! samples that would have shown the stall — hence *coordinated omission*.
//!
//! keel-bench's *open loop* (`--rate R`) avoids it by separating *when a
//! request should be sent* from *when it could be sent*:
//!
//! - each connection owns a precomputed arrival schedule
//!   ([`crate::schedule::Schedule`]) at `R / connections` requests per
//!   second, uniform or Poisson, that does not depend on replies;
//! - a request whose intended send time has passed but that cannot go out yet
//!   (the connection already has `pipeline` requests in flight, is being
//!   reconnected, or the socket is full) waits in the client, and its clock is
//!   already running;
//! - latency is always `reply received − intended send time`
//!   ([`crate::driver`] keeps the intended time beside each in-flight
//!   request), so a one-second stall shows up as a second of latency for every
//!   request scheduled during it, not as missing requests. The time from the
//!   actual send is recorded separately as *service time*, which is what a
//!   closed-loop tool would have reported.
//!
//! In the closed loop the intended time *is* the send time, so both numbers
//! agree and the usual caveat applies: closed-loop latency under saturation
//! understates what users would see.
//!
//! This file holds the pieces that do not depend on time: the random number
//! generator, key distributions (uniform, zipfian, sequential), value sizes,
//! TTLs, and the weighted command mix, plus the encoding of one request into
//! RESP with keel-resp's [`Writer`].

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::BytesMut;
use keel_resp::{Protocol, Writer};

/// A small, fast, seedable PRNG (xoshiro256++), so runs are reproducible
/// from `--seed` and drawing a key costs a few nanoseconds.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from one number (through SplitMix64, so nearby
    /// seeds give unrelated streams: connection `i` uses `seed + i`).
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, n)` (Lemire's multiply-shift; bias below 2^-64·n,
    /// irrelevant here). `n == 0` gives 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Picks items in proportion to their weights; used for the command mix,
/// weighted value sizes and TTL mixtures, so all three honour weights the
/// same way.
#[derive(Clone, Debug)]
pub struct Weighted<T> {
    items: Vec<T>,
    cumulative: Vec<f64>,
}

impl<T> Weighted<T> {
    /// `None` if empty, or if any weight is negative or not finite, or all
    /// are zero: a mixture that can never pick anything is a scenario error.
    pub fn new(pairs: Vec<(T, f64)>) -> Option<Self> {
        let mut total = 0.0;
        let mut items = Vec::with_capacity(pairs.len());
        let mut cumulative = Vec::with_capacity(pairs.len());
        for (item, w) in pairs {
            if !w.is_finite() || w < 0.0 {
                return None;
            }
            total += w;
            items.push(item);
            cumulative.push(total);
        }
        if total <= 0.0 {
            return None;
        }
        Some(Weighted { items, cumulative })
    }

    /// One item, chosen with probability weight / total.
    #[inline]
    pub fn pick(&self, rng: &mut Rng) -> &T {
        let total = *self.cumulative.last().expect("non-empty by construction");
        let x = rng.unit() * total;
        let i = self.cumulative.partition_point(|&c| c <= x);
        &self.items[i.min(self.items.len() - 1)]
    }

    /// The items with their normalised probabilities, for printing.
    pub fn shares(&self) -> impl Iterator<Item = (&T, f64)> {
        let total = *self.cumulative.last().unwrap_or(&1.0);
        let mut prev = 0.0;
        self.items
            .iter()
            .zip(&self.cumulative)
            .map(move |(it, &c)| {
                let share = (c - prev) / total;
                prev = c;
                (it, share)
            })
    }
}

/// Zipfian ranks over `[0, n)` with exponent θ: P(rank k) ∝ 1/(k+1)^θ,
/// exactly, by Hörmann and Derflinger's rejection-inversion ("Rejection-
/// inversion to generate variates from monotone discrete distributions",
/// 1996; the method Apache Commons uses). O(1) per draw with no O(n) set-up,
/// so a 100M-key space costs nothing to prepare; the YCSB/Gray formula was
/// tried first and over-weights ranks 2..10 by ~15%. Rank 0 is the hottest.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    /// `theta` must be positive and at most 10, `n` at least 2.
    pub fn new(n: u64, theta: f64) -> Result<Self, String> {
        if !(theta > 0.0 && theta <= 10.0) {
            return Err(format!("zipf theta must be in (0, 10], got {theta}"));
        }
        if n < 2 {
            return Err(format!("zipf needs at least 2 keys, got {n}"));
        }
        let mut z = Zipf {
            n,
            theta,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        Ok(z)
    }

    /// The skew parameter, for printing.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// Probability of rank `k` (0-based), for tests and hit-ratio estimates;
    /// O(n), so not for the hot path.
    pub fn probability(&self, k: u64) -> f64 {
        1.0 / ((k + 1) as f64).powf(self.theta) / zeta(self.n, self.theta)
    }

    /// One rank in `[0, n)`.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.unit() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            if k as f64 - x <= self.s || u >= self.h_integral(k as f64 + 0.5) - self.h(k as f64) {
                return k - 1;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.theta) * lx) * lx
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.theta)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// ln(1+x)/x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x − 1)/x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// Σ_{i=1..n} i^-θ; exact up to 10M terms, Euler–Maclaurin tail beyond.
fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 10_000_000;
    let m = n.min(EXACT);
    let mut sum = 0.0;
    for i in 1..=m {
        sum += 1.0 / (i as f64).powf(theta);
    }
    if n > m {
        let (a, b) = (m as f64, n as f64);
        sum += (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
            + (b.powf(-theta) - a.powf(-theta)) / 2.0;
    }
    sum
}

/// How key indices are drawn within a key range.
#[derive(Debug)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform,
    /// Skewed toward the start of the range.
    Zipf(Zipf),
    /// 0, 1, 2, … shared by all connections (one global counter), either
    /// wrapping around or stopping after one pass (a cold scan).
    Sequential {
        /// Next index to hand out.
        next: AtomicU64,
        /// Start over at the end of the range instead of running dry.
        wrap: bool,
    },
}

/// A key range `[first, first + count)` and how to draw from it.
#[derive(Debug)]
pub struct Keys {
    /// First key index.
    pub first: u64,
    /// Number of keys in the range.
    pub count: u64,
    /// Distribution over the range.
    pub dist: KeyDist,
}

impl Keys {
    /// A range with a distribution; `count` is clamped to at least 1.
    pub fn new(first: u64, count: u64, dist: KeyDist) -> Self {
        Keys {
            first,
            count: count.max(1),
            dist,
        }
    }

    /// Next key index, or `None` once a non-wrapping sequential range has
    /// been used up.
    #[inline]
    pub fn next(&self, rng: &mut Rng) -> Option<u64> {
        let offset = match &self.dist {
            KeyDist::Uniform => rng.below(self.count),
            KeyDist::Zipf(z) => z.sample(rng),
            KeyDist::Sequential { next, wrap } => {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if *wrap {
                    i % self.count
                } else if i < self.count {
                    i
                } else {
                    return None;
                }
            }
        };
        Some(self.first + offset)
    }

    /// Short human description, for the run header.
    pub fn describe(&self) -> String {
        let d = match &self.dist {
            KeyDist::Uniform => "uniform".to_string(),
            KeyDist::Zipf(z) => format!("zipf θ={}", z.theta()),
            KeyDist::Sequential { wrap: true, .. } => "sequential".to_string(),
            KeyDist::Sequential { wrap: false, .. } => "sequential one-pass".to_string(),
        };
        format!("{d} over [{}, {})", self.first, self.first + self.count)
    }
}

/// Value sizes in bytes.
#[derive(Clone, Debug)]
pub enum ValueSize {
    /// Always this many bytes.
    Fixed(usize),
    /// Uniform in `[lo, hi]`.
    Uniform(usize, usize),
    /// A weighted list, e.g. 98% × 200 B + 2% × 32 KB.
    Weighted(Weighted<usize>),
}

impl ValueSize {
    /// One size.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> usize {
        match self {
            ValueSize::Fixed(n) => *n,
            ValueSize::Uniform(lo, hi) => lo + rng.below((hi - lo + 1) as u64) as usize,
            ValueSize::Weighted(w) => *w.pick(rng),
        }
    }

    /// Largest size this can produce, to size the shared value buffer.
    pub fn max(&self) -> usize {
        match self {
            ValueSize::Fixed(n) => *n,
            ValueSize::Uniform(_, hi) => *hi,
            ValueSize::Weighted(w) => w.items.iter().copied().max().unwrap_or(0),
        }
    }

    /// Mean size, for memory estimates in the run header.
    pub fn mean(&self) -> f64 {
        match self {
            ValueSize::Fixed(n) => *n as f64,
            ValueSize::Uniform(lo, hi) => (*lo + *hi) as f64 / 2.0,
            ValueSize::Weighted(w) => w.shares().map(|(n, p)| *n as f64 * p).sum(),
        }
    }
}

/// Time-to-live attached to writes, in milliseconds (sent as `PX`).
#[derive(Clone, Debug)]
pub enum Ttl {
    /// No expiry.
    None,
    /// Always this many milliseconds.
    Fixed(u64),
    /// Uniform in `[lo, hi]` milliseconds.
    Uniform(u64, u64),
    /// A weighted mixture of the above (e.g. 80% short, 20% none).
    Mix(Weighted<Ttl>),
}

impl Ttl {
    /// One TTL, or `None` for a persistent key.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> Option<u64> {
        match self {
            Ttl::None => None,
            Ttl::Fixed(ms) => Some(*ms),
            Ttl::Uniform(lo, hi) => Some(lo + rng.below(hi - lo + 1)),
            Ttl::Mix(w) => w.pick(rng).sample(rng),
        }
    }
}

/// The commands keel-bench can send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// `GET key` — a hit or a miss.
    Get,
    /// `SET key value [PX ttl]`.
    Set,
    /// `MGET key…` with `count` keys.
    Mget,
    /// `DEL key`.
    Del,
    /// `INCR key`.
    Incr,
    /// `EXPIRE`-style: `PEXPIRE key ttl`.
    Expire,
    /// `HSET key field value` with field drawn from `count` fields.
    Hset,
    /// `HGET key field`.
    Hget,
    /// `SADD key member` with member drawn from `count` members.
    Sadd,
    /// `SMEMBERS key`.
    Smembers,
}

impl Cmd {
    /// Parses a command name from a scenario or `--mix`.
    pub fn parse(s: &str) -> Option<Cmd> {
        Some(match s.to_ascii_uppercase().as_str() {
            "GET" => Cmd::Get,
            "SET" => Cmd::Set,
            "MGET" => Cmd::Mget,
            "DEL" => Cmd::Del,
            "INCR" => Cmd::Incr,
            "EXPIRE" | "PEXPIRE" => Cmd::Expire,
            "HSET" => Cmd::Hset,
            "HGET" => Cmd::Hget,
            "SADD" => Cmd::Sadd,
            "SMEMBERS" => Cmd::Smembers,
            _ => return None,
        })
    }

    /// Upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            Cmd::Get => "GET",
            Cmd::Set => "SET",
            Cmd::Mget => "MGET",
            Cmd::Del => "DEL",
            Cmd::Incr => "INCR",
            Cmd::Expire => "PEXPIRE",
            Cmd::Hset => "HSET",
            Cmd::Hget => "HGET",
            Cmd::Sadd => "SADD",
            Cmd::Smembers => "SMEMBERS",
        }
    }

    /// Key prefix used when the scenario gives none: one per data type, so
    /// a mix of INCR, HSET and GET never trips over WRONGTYPE.
    pub fn default_prefix(self) -> &'static str {
        match self {
            Cmd::Get | Cmd::Set | Cmd::Mget | Cmd::Del | Cmd::Expire => "key:",
            Cmd::Incr => "counter:",
            Cmd::Hset | Cmd::Hget => "hash:",
            Cmd::Sadd | Cmd::Smembers => "set:",
        }
    }

    /// Whether replies of this command say hit or miss.
    pub fn reads(self) -> bool {
        matches!(self, Cmd::Get | Cmd::Mget | Cmd::Hget)
    }
}

/// One line of the command mix.
#[derive(Debug)]
pub struct MixEntry {
    /// What to send.
    pub cmd: Cmd,
    /// Key prefix.
    pub prefix: String,
    /// Keys this entry touches.
    pub keys: Keys,
    /// Value sizes for writes.
    pub value: ValueSize,
    /// TTL for SET / PEXPIRE.
    pub ttl: Ttl,
    /// MGET key count, HSET/HGET field count, SADD member count.
    pub count: u64,
    /// Cache-aside: after a GET miss, SET the key (counted as its own
    /// request), the way an application fills its cache; this is what makes
    /// a cold scan pollute an LRU.
    pub fill_on_miss: bool,
}

/// The whole workload: the weighted mix and the bytes values are cut from.
#[derive(Debug)]
pub struct Workload {
    /// Weighted command mix; the index is the entry id in requests.
    pub mix: Weighted<MixEntry>,
    /// Shared value bytes, as long as the largest value.
    pub value_bytes: Vec<u8>,
}

/// What one encoded request needs remembered until its reply: which mix
/// entry produced it (for hit/miss and cache-aside) and its key.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    /// Index of the mix entry, or `FILL` for a cache-aside SET.
    pub entry: u16,
    /// Key index (for the cache-aside SET after a miss).
    pub key: u64,
}

/// Marker entry index for cache-aside fills.
pub const FILL: u16 = u16::MAX;

impl Workload {
    /// Builds the workload and its value buffer.
    pub fn new(mix: Weighted<MixEntry>) -> Self {
        let max = mix.items.iter().map(|e| e.value.max()).max().unwrap_or(0);
        // Printable, slightly varied bytes: compressors and dedup on the
        // server side should not make values cheaper than they look.
        let value_bytes = (0..max)
            .map(|i| b'a' + ((i * 7 + i / 13) % 26) as u8)
            .collect();
        Workload { mix, value_bytes }
    }

    /// The mix entries with their shares, for the run header.
    pub fn entries(&self) -> impl Iterator<Item = (&MixEntry, f64)> {
        self.mix.shares()
    }

    /// Entry by index.
    pub fn entry(&self, i: u16) -> &MixEntry {
        &self.mix.items[i as usize]
    }

    /// Appends one request to `out` and says what was sent.
    pub fn encode_next(&self, rng: &mut Rng, out: &mut BytesMut) -> Sent {
        // Pick an entry whose keys are not exhausted (one-pass ranges run
        // dry); after a few tries fall back to a uniform key of the entry.
        let mut last = 0;
        for _ in 0..64 {
            let total = *self.mix.cumulative.last().expect("non-empty");
            let x = rng.unit() * total;
            let i = self
                .mix
                .cumulative
                .partition_point(|&c| c <= x)
                .min(self.mix.items.len() - 1);
            last = i;
            if let Some(key) = self.mix.items[i].keys.next(rng) {
                self.encode(i as u16, key, rng, out);
                return Sent {
                    entry: i as u16,
                    key,
                };
            }
        }
        let e = &self.mix.items[last];
        let key = e.keys.first + rng.below(e.keys.count);
        self.encode(last as u16, key, rng, out);
        Sent {
            entry: last as u16,
            key,
        }
    }

    /// Appends the cache-aside SET that follows a miss of `entry`'s `key`.
    pub fn encode_fill(&self, entry: u16, key: u64, rng: &mut Rng, out: &mut BytesMut) -> Sent {
        let e = &self.mix.items[entry as usize];
        let mut kb = KeyBuf::new();
        let k = kb.format(&e.prefix, key);
        let len = e.value.sample(rng);
        let ttl = e.ttl.sample(rng);
        set_command(out, k, &self.value_bytes[..len], ttl);
        Sent { entry: FILL, key }
    }

    fn encode(&self, entry: u16, key: u64, rng: &mut Rng, out: &mut BytesMut) {
        let e = &self.mix.items[entry as usize];
        let mut kb = KeyBuf::new();
        let k = kb.format(&e.prefix, key);
        if e.cmd == Cmd::Set {
            let len = e.value.sample(rng);
            let ttl = e.ttl.sample(rng);
            set_command(out, k, &self.value_bytes[..len], ttl);
            return;
        }
        let mut w = Writer::new(out, Protocol::Resp2);
        match e.cmd {
            Cmd::Get => {
                w.array(2);
                w.bulk(b"GET");
                w.bulk(k);
            }
            Cmd::Set => unreachable!("handled above"),
            Cmd::Mget => {
                let n = e.count.max(1) as usize;
                w.array(1 + n);
                w.bulk(b"MGET");
                w.bulk(k);
                let mut other = KeyBuf::new();
                for _ in 1..n {
                    let key = e.keys.next(rng).unwrap_or(e.keys.first);
                    w.bulk(other.format(&e.prefix, key));
                }
            }
            Cmd::Del => {
                w.array(2);
                w.bulk(b"DEL");
                w.bulk(k);
            }
            Cmd::Incr => {
                w.array(2);
                w.bulk(b"INCR");
                w.bulk(k);
            }
            Cmd::Expire => {
                let ttl = e.ttl.sample(rng).unwrap_or(60_000);
                let mut digits = KeyBuf::new();
                w.array(3);
                w.bulk(b"PEXPIRE");
                w.bulk(k);
                w.bulk(digits.format("", ttl));
            }
            Cmd::Hset | Cmd::Hget => {
                let field = rng.below(e.count.max(1));
                let mut fb = KeyBuf::new();
                let f = fb.format("f", field);
                if e.cmd == Cmd::Hset {
                    let len = e.value.sample(rng);
                    w.array(4);
                    w.bulk(b"HSET");
                    w.bulk(k);
                    w.bulk(f);
                    w.bulk(&self.value_bytes[..len]);
                } else {
                    w.array(3);
                    w.bulk(b"HGET");
                    w.bulk(k);
                    w.bulk(f);
                }
            }
            Cmd::Sadd => {
                let member = rng.below(e.count.max(1));
                let mut mb = KeyBuf::new();
                w.array(3);
                w.bulk(b"SADD");
                w.bulk(k);
                w.bulk(mb.format("m", member));
            }
            Cmd::Smembers => {
                w.array(2);
                w.bulk(b"SMEMBERS");
                w.bulk(k);
            }
        }
    }
}

/// `SET key value [PX ms]`, shared by the mix, cache-aside fills and prefill.
pub fn set_command(out: &mut BytesMut, key: &[u8], value: &[u8], ttl_ms: Option<u64>) {
    let mut w = Writer::new(out, Protocol::Resp2);
    match ttl_ms {
        None => {
            w.array(3);
            w.bulk(b"SET");
            w.bulk(key);
            w.bulk(value);
        }
        Some(ms) => {
            let mut digits = KeyBuf::new();
            w.array(5);
            w.bulk(b"SET");
            w.bulk(key);
            w.bulk(value);
            w.bulk(b"PX");
            w.bulk(digits.format("", ms.max(1)));
        }
    }
}

/// Formats `prefix` + a zero-padded 12-digit index (like redis-benchmark's
/// `key:000000000042`) on the stack: no allocation per request.
pub struct KeyBuf {
    buf: [u8; 96],
}

impl Default for KeyBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyBuf {
    /// An empty buffer.
    pub fn new() -> Self {
        KeyBuf { buf: [0; 96] }
    }

    /// `prefix` followed by `n`; keys get 12 digits, other numbers (TTLs,
    /// fields) as many as they need. Prefixes longer than 64 bytes are cut.
    pub fn format(&mut self, prefix: &str, n: u64) -> &[u8] {
        let p = &prefix.as_bytes()[..prefix.len().min(64)];
        self.buf[..p.len()].copy_from_slice(p);
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut v = n;
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let width = if prefix.is_empty() || prefix.len() == 1 {
            digits.len() - i
        } else {
            (digits.len() - i).max(12)
        };
        let pad = width - (digits.len() - i);
        let mut at = p.len();
        for _ in 0..pad {
            self.buf[at] = b'0';
            at += 1;
        }
        let d = &digits[i..];
        self.buf[at..at + d.len()].copy_from_slice(d);
        &self.buf[..at + d.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_range_stays_in_range_and_is_flat() {
        let keys = Keys::new(1000, 100, KeyDist::Uniform);
        let mut rng = Rng::new(7);
        let mut buckets = [0u64; 10];
        let draws = 200_000;
        for _ in 0..draws {
            let k = keys.next(&mut rng).unwrap();
            assert!((1000..1100).contains(&k), "{k} outside [1000, 1100)");
            buckets[((k - 1000) / 10) as usize] += 1;
        }
        let expect = draws as f64 / 10.0;
        for (i, &b) in buckets.iter().enumerate() {
            let dev = (b as f64 - expect).abs() / expect;
            assert!(dev < 0.03, "bucket {i}: {b} vs {expect}");
        }
        // Value sizes: uniform [100, 300] covers both ends and nothing else.
        let v = ValueSize::Uniform(100, 300);
        let (mut lo, mut hi) = (usize::MAX, 0);
        for _ in 0..50_000 {
            let s = v.sample(&mut rng);
            lo = lo.min(s);
            hi = hi.max(s);
        }
        assert_eq!((lo, hi), (100, 300));
    }

    #[test]
    fn zipf_is_skewed_as_theta_says() {
        let n = 10_000;
        let z = Zipf::new(n, 0.99).unwrap();
        let mut rng = Rng::new(42);
        let mut counts = vec![0u64; n as usize];
        let draws = 1_000_000;
        for _ in 0..draws {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        // Head ranks follow p(k) ∝ 1/(k+1)^θ within sampling noise.
        for k in [0u64, 1, 2, 5, 9, 99] {
            let expect = z.probability(k) * draws as f64;
            let got = counts[k as usize] as f64;
            assert!(
                (got - expect).abs() / expect < 5.0 / expect.sqrt() + 0.01,
                "rank {k}: {got} vs {expect}"
            );
        }
        // The hottest 1% of keys take far more than 1% of requests.
        let top: u64 = counts[..100].iter().sum();
        let share = top as f64 / draws as f64;
        let expect: f64 = (0..100).map(|k| z.probability(k)).sum();
        assert!(
            (share - expect).abs() < 0.02,
            "top-1% share {share} vs {expect}"
        );
        assert!(share > 0.4);
        // And a flatter theta is flatter.
        let flat = Zipf::new(n, 0.5).unwrap();
        assert!(flat.probability(0) < z.probability(0) / 5.0);
        assert!(Zipf::new(n, 0.0).is_err());
        // theta = 1 (classic Zipf) is fine too.
        let one = Zipf::new(n, 1.0).unwrap();
        let zeros = (0..100_000).filter(|_| one.sample(&mut rng) == 0).count() as f64;
        let expect = one.probability(0) * 100_000.0;
        assert!(
            (zeros - expect).abs() / expect < 0.05,
            "{zeros} vs {expect}"
        );
    }

    #[test]
    fn zeta_tail_approximation_is_close() {
        // Compare the exact sum with the approximated tail on a size where
        // both are cheap: split at 10M is internal, so check continuity.
        let exact = zeta(10_000_000, 0.99);
        let approx = zeta(10_000_001, 0.99);
        assert!(approx > exact && approx - exact < 1e-6);
    }

    #[test]
    fn sequential_one_pass_runs_dry() {
        let keys = Keys::new(
            5,
            3,
            KeyDist::Sequential {
                next: AtomicU64::new(0),
                wrap: false,
            },
        );
        let mut rng = Rng::new(1);
        let got: Vec<_> = (0..5).map(|_| keys.next(&mut rng)).collect();
        assert_eq!(got, vec![Some(5), Some(6), Some(7), None, None]);
    }

    #[test]
    fn mixture_weights_are_honoured() {
        let w = Weighted::new(vec![("a", 70.0), ("b", 20.0), ("c", 10.0), ("zero", 0.0)]).unwrap();
        let mut rng = Rng::new(3);
        let mut counts = std::collections::HashMap::new();
        let draws = 300_000;
        for _ in 0..draws {
            *counts.entry(*w.pick(&mut rng)).or_insert(0u64) += 1;
        }
        for (name, p) in [("a", 0.7), ("b", 0.2), ("c", 0.1)] {
            let share = counts[name] as f64 / draws as f64;
            // 5 standard deviations of a binomial share.
            let tol = 5.0 * (p * (1.0 - p) / draws as f64).sqrt();
            assert!((share - p).abs() < tol, "{name}: {share} vs {p}");
        }
        assert!(!counts.contains_key("zero"));
        assert!(Weighted::new(vec![("x", 0.0)]).is_none());
        assert!(Weighted::<u8>::new(vec![]).is_none());
    }

    #[test]
    fn value_and_ttl_mixtures_are_honoured() {
        let sizes = ValueSize::Weighted(Weighted::new(vec![(200, 98.0), (32768, 2.0)]).unwrap());
        let ttl = Ttl::Mix(
            Weighted::new(vec![
                (Ttl::Uniform(5_000, 15_000), 80.0),
                (Ttl::Fixed(3_600_000), 10.0),
                (Ttl::None, 10.0),
            ])
            .unwrap(),
        );
        let mut rng = Rng::new(11);
        let draws = 200_000;
        let (mut big, mut short, mut long, mut none) = (0, 0, 0, 0);
        for _ in 0..draws {
            if sizes.sample(&mut rng) == 32768 {
                big += 1;
            }
            match ttl.sample(&mut rng) {
                None => none += 1,
                Some(3_600_000) => long += 1,
                Some(ms) => {
                    assert!((5_000..=15_000).contains(&ms));
                    short += 1;
                }
            }
        }
        let share = |n: i32| n as f64 / draws as f64;
        assert!((share(big) - 0.02).abs() < 0.002, "big {}", share(big));
        assert!((share(short) - 0.8).abs() < 0.005);
        assert!((share(long) - 0.1).abs() < 0.005);
        assert!((share(none) - 0.1).abs() < 0.005);
        assert!((sizes.mean() - (0.98 * 200.0 + 0.02 * 32768.0)).abs() < 1e-6);
    }

    #[test]
    fn requests_are_valid_resp_commands() {
        let entry = |cmd, count| MixEntry {
            cmd,
            prefix: cmd.default_prefix().to_string(),
            keys: Keys::new(0, 10, KeyDist::Uniform),
            value: ValueSize::Fixed(4),
            ttl: Ttl::Fixed(1500),
            count,
            fill_on_miss: false,
        };
        let all = [
            Cmd::Get,
            Cmd::Set,
            Cmd::Mget,
            Cmd::Del,
            Cmd::Incr,
            Cmd::Expire,
            Cmd::Hset,
            Cmd::Hget,
            Cmd::Sadd,
            Cmd::Smembers,
        ];
        let w = Workload::new(
            Weighted::new(all.iter().map(|&c| (entry(c, 3), 1.0)).collect()).unwrap(),
        );
        let mut rng = Rng::new(5);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2000 {
            let mut buf = BytesMut::new();
            let sent = w.encode_next(&mut rng, &mut buf);
            let (frame, used) = keel_resp::decode(&buf).unwrap().unwrap();
            assert_eq!(used, buf.len());
            let keel_resp::Frame::Array(args) = frame else {
                panic!("not an array")
            };
            let keel_resp::Frame::Bulk(name) = &args[0] else {
                panic!()
            };
            let cmd = w.entry(sent.entry).cmd;
            assert_eq!(&name[..], cmd.name().as_bytes());
            seen.insert(cmd.name());
            match cmd {
                Cmd::Set => assert_eq!(args.len(), 5, "SET key value PX ms"),
                Cmd::Mget => assert_eq!(args.len(), 4),
                _ => {}
            }
        }
        assert_eq!(seen.len(), all.len());
        let mut kb = KeyBuf::new();
        assert_eq!(kb.format("key:", 42), b"key:000000000042");
        assert_eq!(kb.format("", 1500), b"1500");
    }
}

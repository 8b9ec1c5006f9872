//! What is known about one key, and percentiles over many: the numbers the
//! report's columns are made of, kept apart from I/O and formatting.

/// A key's type as `TYPE` names it; interned as a small enum so a million
/// records stay small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyType {
    /// `string`
    String,
    /// `list`
    List,
    /// `set`
    Set,
    /// `zset`
    ZSet,
    /// `hash`
    Hash,
    /// `stream`
    Stream,
    /// Anything else a server reports (modules), or a failed `TYPE`.
    Other,
}

impl KeyType {
    /// Reads a `TYPE` reply.
    pub fn parse(name: &str) -> KeyType {
        match name {
            "string" => KeyType::String,
            "list" => KeyType::List,
            "set" => KeyType::Set,
            "zset" => KeyType::ZSet,
            "hash" => KeyType::Hash,
            "stream" => KeyType::Stream,
            _ => KeyType::Other,
        }
    }

    /// The name `TYPE` uses, for output.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::String => "string",
            KeyType::List => "list",
            KeyType::Set => "set",
            KeyType::ZSet => "zset",
            KeyType::Hash => "hash",
            KeyType::Stream => "stream",
            KeyType::Other => "other",
        }
    }
}

/// One inspected key. Each figure is `None` when the server could not give
/// it (command missing or refused), so gaps are counted rather than guessed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyStat {
    /// `TYPE`.
    pub kind: KeyType,
    /// `MEMORY USAGE`, bytes.
    pub bytes: Option<u64>,
    /// `OBJECT IDLETIME`, seconds since last access.
    pub idle: Option<u64>,
    /// `OBJECT FREQ`, the LFU counter (0–255), under LFU policies.
    pub freq: Option<u64>,
    /// `PTTL`: `Some(ms)` remaining, `None` for a key without TTL.
    pub ttl_ms: Option<u64>,
}

/// p50 / p90 / max of some quantity: the columns the report shows for idle
/// time, LFU frequency and TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile (JSON/CSV only; the table has no room).
    pub p99: u64,
    /// Largest value.
    pub max: u64,
}

impl Spread {
    /// The spread of `values` (sorted in place), or `None` when empty.
    pub fn of(values: &mut [u64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_unstable();
        Some(Spread {
            p50: percentile(values, 50.0)?,
            p90: percentile(values, 90.0)?,
            p99: percentile(values, 99.0)?,
            max: *values.last()?,
        })
    }
}

/// Nearest-rank percentile of sorted values: the smallest value with at
/// least `p`% of the values at or below it. Always an observed value, so
/// "p90 idle 8 h" means a real key sat that long.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 90.0), Some(90));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[7], 50.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
        let v = [10, 20, 30, 40];
        assert_eq!(percentile(&v, 50.0), Some(20));
        assert_eq!(percentile(&v, 51.0), Some(30));
    }

    #[test]
    fn spread_sorts_and_summarises() {
        let mut v = vec![5, 1, 9, 3, 7, 2, 8, 4, 6, 10];
        let s = Spread::of(&mut v).unwrap();
        assert_eq!((s.p50, s.p90, s.p99, s.max), (5, 9, 10, 10));
        assert_eq!(Spread::of(&mut []), None);
    }

    #[test]
    fn type_names_round_trip() {
        for t in ["string", "list", "set", "zset", "hash", "stream"] {
            assert_eq!(KeyType::parse(t).name(), t);
        }
        assert_eq!(KeyType::parse("ReJSON-RL"), KeyType::Other);
    }
}

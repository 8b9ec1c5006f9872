//! From raw records to the report's rows: collapse patterns, scale each
//! pattern's figures to the keyspace, sort by memory, attach TTL advice.
//! Rendering is [`crate::render`]'s job; this is only numbers.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::advice::{self, CapEffect};
use crate::estimate::{Draw, Estimate, PatternSums, Sample};
use crate::pattern;
use crate::stats::{KeyStat, KeyType, Spread};
use crate::walk::{Collected, Gaps, ServerInfo};

/// Most patterns given TTL advice, largest first.
pub const MAX_ADVICE_PATTERNS: usize = 10;

/// One pattern's line of the report.
#[derive(Debug, Clone)]
pub struct Row {
    /// The pattern, `*` for variable segments.
    pub pattern: String,
    /// Sampled keys by type.
    pub types: BTreeMap<KeyType, u64>,
    /// Keys of the pattern actually inspected.
    pub sampled: u64,
    /// Keys in the keyspace (estimated under `--sample`).
    pub keys: Estimate,
    /// Total bytes; `None` when MEMORY USAGE gave nothing for this pattern.
    pub bytes: Option<Estimate>,
    /// Mean bytes per key over the keys with a MEMORY USAGE figure.
    pub avg_bytes: Option<f64>,
    /// Share (0–1) of all bytes.
    pub share: Option<Estimate>,
    /// Idle seconds (LRU policies).
    pub idle: Option<Spread>,
    /// LFU counter (LFU policies).
    pub freq: Option<Spread>,
    /// Remaining TTL in ms, over the keys that have one.
    pub ttl_ms: Option<Spread>,
    /// Share (0–1) of keys without TTL.
    pub no_ttl_share: f64,
    /// `--ttl-advice` effects, empty when not asked for or not large
    /// (only the [`MAX_ADVICE_PATTERNS`] largest are considered).
    pub advice: Vec<CapEffect>,
}

/// The whole report.
#[derive(Debug, Clone)]
pub struct Report {
    /// The server read.
    pub server: ServerInfo,
    /// SELECTed db.
    pub db: u32,
    /// How keys were chosen, and the sums behind every interval.
    pub sample: Sample,
    /// Estimated total bytes of the keyspace (sum of MEMORY USAGE).
    pub total_bytes: Estimate,
    /// Rows, largest total bytes first.
    pub rows: Vec<Row>,
    /// What the server could not tell.
    pub gaps: Gaps,
    /// Wall time of the walk.
    pub elapsed: Duration,
    /// Whether `--ttl-advice` was asked for.
    pub ttl_advice: bool,
    /// Threshold of share for advice.
    pub advice_min_share: f64,
}

impl Report {
    /// Keys inspected.
    pub fn inspected(&self) -> u64 {
        self.sample.n
    }
}

/// Builds the report from what the walk collected.
pub fn build(
    collected: Collected,
    db: u32,
    separators: &[char],
    max_literals: usize,
    ttl_advice: bool,
    advice_min_share: f64,
) -> Report {
    let mut raw: Vec<String> = collected.by_pattern.keys().cloned().collect();
    if let Some(all) = &collected.all_raw_patterns {
        raw.extend(
            all.iter()
                .filter(|p| !collected.by_pattern.contains_key(*p))
                .cloned(),
        );
    }
    let mapping = pattern::collapse(&raw, separators, max_literals);
    let mut groups: HashMap<String, Vec<KeyStat>> = HashMap::new();
    for (raw_pattern, stats) in collected.by_pattern {
        let target = mapping.get(&raw_pattern).cloned().unwrap_or(raw_pattern);
        groups.entry(target).or_default().extend(stats);
    }
    let n: u64 = groups.values().map(|v| v.len() as u64).sum();
    let (mut sum_bytes, mut sum_bytes_sq) = (0.0, 0.0);
    for s in groups.values().flatten() {
        let b = s.bytes.unwrap_or(0) as f64;
        sum_bytes += b;
        sum_bytes_sq += b * b;
    }
    let sample = Sample {
        n,
        population: match collected.draw {
            Draw::Exhaustive => n,
            _ => collected.population,
        },
        draw: collected.draw,
        sum_bytes,
        sum_bytes_sq,
    };
    let any_memory = groups.values().flatten().any(|s| s.bytes.is_some());
    let mut rows: Vec<Row> = groups
        .iter()
        .map(|(pattern, stats)| row(pattern.clone(), stats, &sample, any_memory))
        .collect();
    rows.sort_by(|a, b| {
        let (ab, bb) = (
            a.bytes.map_or(0.0, |e| e.value),
            b.bytes.map_or(0.0, |e| e.value),
        );
        bb.total_cmp(&ab)
            .then(b.keys.value.total_cmp(&a.keys.value))
            .then(a.pattern.cmp(&b.pattern))
    });
    if ttl_advice {
        // Patterns holding at least `advice_min_share` of memory, largest first.
        let scale = sample.scale();
        for row in rows.iter_mut().take(MAX_ADVICE_PATTERNS) {
            if row.share.map_or(0.0, |s| s.value) < advice_min_share {
                continue;
            }
            let keys = &groups[&row.pattern];
            let mut idle: Vec<u64> = keys.iter().filter_map(|k| k.idle).collect();
            idle.sort_unstable();
            row.advice = advice::evaluate(keys, scale, &advice::candidate_caps(&idle));
        }
    }
    Report {
        server: collected.server,
        db,
        total_bytes: sample.total_bytes(),
        sample,
        rows,
        gaps: collected.gaps,
        elapsed: collected.elapsed,
        ttl_advice,
        advice_min_share,
    }
}

fn row(pattern: String, stats: &[KeyStat], sample: &Sample, any_memory: bool) -> Row {
    let mut sums = PatternSums {
        keys: stats.len() as u64,
        ..Default::default()
    };
    let mut with_bytes = 0u64;
    let mut types = BTreeMap::new();
    let (mut idle, mut freq, mut ttl) = (Vec::new(), Vec::new(), Vec::new());
    for s in stats {
        if let Some(b) = s.bytes {
            let b = b as f64;
            sums.bytes += b;
            sums.bytes_sq += b * b;
            with_bytes += 1;
        }
        *types.entry(s.kind).or_insert(0) += 1;
        idle.extend(s.idle);
        freq.extend(s.freq);
        ttl.extend(s.ttl_ms);
    }
    let no_ttl = stats.len() - ttl.len();
    Row {
        pattern,
        types,
        sampled: stats.len() as u64,
        keys: sample.keys(&sums),
        bytes: any_memory.then(|| sample.bytes(&sums)),
        avg_bytes: (with_bytes > 0).then(|| sums.bytes / with_bytes as f64),
        share: any_memory.then(|| sample.share(&sums)),
        idle: Spread::of(&mut idle),
        freq: Spread::of(&mut freq),
        ttl_ms: Spread::of(&mut ttl),
        no_ttl_share: if stats.is_empty() {
            0.0
        } else {
            no_ttl as f64 / stats.len() as f64
        },
        advice: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(bytes: u64, idle: u64, ttl: Option<u64>) -> KeyStat {
        KeyStat {
            kind: KeyType::String,
            bytes: Some(bytes),
            idle: Some(idle),
            freq: None,
            ttl_ms: ttl,
        }
    }

    #[test]
    fn exhaustive_rows_are_exact_and_sorted_by_bytes() {
        let mut by_pattern = HashMap::new();
        by_pattern.insert(
            "a:*".to_string(),
            vec![stat(100, 0, None), stat(100, 10, Some(5000))],
        );
        by_pattern.insert("big:*".to_string(), vec![stat(1000, 99, None)]);
        let c = Collected {
            server: ServerInfo::default(),
            draw: Draw::Exhaustive,
            population: 3,
            by_pattern,
            all_raw_patterns: None,
            gaps: Gaps::default(),
            elapsed: Duration::ZERO,
        };
        let r = build(c, 0, &[':'], 50, false, 0.05);
        assert_eq!(r.rows[0].pattern, "big:*");
        let a = &r.rows[1];
        assert_eq!(a.keys, Estimate::exact(2.0));
        assert_eq!(a.bytes, Some(Estimate::exact(200.0)));
        assert_eq!(a.avg_bytes, Some(100.0));
        assert!((a.share.unwrap().value - 200.0 / 1200.0).abs() < 1e-12);
        assert_eq!(a.no_ttl_share, 0.5);
        assert_eq!(a.ttl_ms.unwrap().max, 5000);
        assert_eq!(a.idle.unwrap().max, 10);
        assert_eq!(r.total_bytes, Estimate::exact(1200.0));
    }
}

//! `--ttl-advice`: what capping a pattern's TTL would free, read off the
//! idle times already observed — the analysis one otherwise does by hand
//! before choosing TTLs.
//!
//! The model: a TTL is (re)set when a key is written. A key idle for longer
//! than a cap C has been neither read nor written for more than C, so had
//! its TTL been at most C it would have expired by now; its bytes are what
//! the cap frees. Keys idle for at most C were accessed within C: the share
//! of them is the share of the pattern's keys still in use at that horizon,
//! i.e. the hit rate the cap would put at risk is at most the share *not*
//! read within C (those keys would be re-fetched on their next read).

use crate::stats::KeyStat;

/// Caps always considered: 1 h, 8 h, 24 h, 7 d.
pub const STANDARD_CAPS: [u64; 4] = [3600, 8 * 3600, 24 * 3600, 7 * 24 * 3600];

/// The effect of one cap on one pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapEffect {
    /// The cap, seconds.
    pub cap_secs: u64,
    /// Keys idle longer than the cap (scaled to the keyspace).
    pub keys_freed: f64,
    /// Their bytes (scaled to the keyspace).
    pub bytes_freed: f64,
    /// Share (0–1) of the pattern's bytes freed.
    pub share_of_pattern: f64,
    /// Share (0–1) of the pattern's keys accessed within the cap.
    pub read_within: f64,
}

/// The caps to evaluate for one pattern: the standard ones plus the
/// pattern's own p50 and p90 idle times rounded to a whole hour (or minute
/// below an hour), when they are at least 5 minutes and differ from every
/// standard cap by more than a factor of 1.5 — the idle distribution's
/// knees are often better caps than round numbers.
pub fn candidate_caps(sorted_idle: &[u64]) -> Vec<u64> {
    let mut caps: Vec<u64> = STANDARD_CAPS.to_vec();
    for p in [50.0, 90.0] {
        if let Some(v) = crate::stats::percentile(sorted_idle, p) {
            let rounded = if v >= 3600 {
                (v + 1800) / 3600 * 3600
            } else {
                (v + 30) / 60 * 60
            };
            let far = STANDARD_CAPS.iter().all(|&c| {
                let (a, b) = (c.max(rounded) as f64, c.min(rounded).max(1) as f64);
                a / b > 1.5
            });
            if rounded >= 300 && far && !caps.contains(&rounded) {
                caps.push(rounded);
            }
        }
    }
    caps.sort_unstable();
    caps
}

/// The effect of each cap on a pattern whose keys are `keys` (each standing
/// for `scale` keys of the keyspace). Keys without an idle time are left
/// out; caps that would free nothing are omitted. Empty when no key has an
/// idle time (LFU policy, or `OBJECT IDLETIME` unavailable).
pub fn evaluate(keys: &[KeyStat], scale: f64, caps: &[u64]) -> Vec<CapEffect> {
    let with_idle: Vec<(u64, u64)> = keys
        .iter()
        .filter_map(|k| Some((k.idle?, k.bytes.unwrap_or(0))))
        .collect();
    if with_idle.is_empty() {
        return Vec::new();
    }
    let total_bytes: u64 = with_idle.iter().map(|&(_, b)| b).sum();
    let n = with_idle.len() as f64;
    caps.iter()
        .filter_map(|&cap| {
            let (mut keys_over, mut bytes_over) = (0u64, 0u64);
            for &(idle, bytes) in &with_idle {
                if idle > cap {
                    keys_over += 1;
                    bytes_over += bytes;
                }
            }
            (keys_over > 0).then(|| CapEffect {
                cap_secs: cap,
                keys_freed: keys_over as f64 * scale,
                bytes_freed: bytes_over as f64 * scale,
                share_of_pattern: if total_bytes > 0 {
                    bytes_over as f64 / total_bytes as f64
                } else {
                    0.0
                },
                read_within: (n - keys_over as f64) / n,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::KeyType;

    fn key(idle: u64, bytes: u64) -> KeyStat {
        KeyStat {
            kind: KeyType::String,
            bytes: Some(bytes),
            idle: Some(idle),
            freq: None,
            ttl_ms: None,
        }
    }

    #[test]
    fn bytes_of_keys_idle_past_the_cap() {
        // 10 keys of 100 bytes: idle 0.5 h ×4, 2 h ×3, 10 h ×2, 30 h ×1.
        let mut keys = Vec::new();
        keys.extend((0..4).map(|_| key(1800, 100)));
        keys.extend((0..3).map(|_| key(7200, 100)));
        keys.extend((0..2).map(|_| key(36_000, 100)));
        keys.push(key(108_000, 100));
        let e = evaluate(&keys, 1.0, &STANDARD_CAPS);
        assert_eq!(e.len(), 3, "7 d frees nothing and is omitted: {e:?}");
        assert_eq!(e[0].cap_secs, 3600);
        assert_eq!(e[0].keys_freed, 6.0);
        assert_eq!(e[0].bytes_freed, 600.0);
        assert!((e[0].share_of_pattern - 0.6).abs() < 1e-12);
        assert!((e[0].read_within - 0.4).abs() < 1e-12);
        assert_eq!((e[1].cap_secs, e[1].bytes_freed), (8 * 3600, 300.0));
        assert!((e[1].read_within - 0.7).abs() < 1e-12);
        assert_eq!((e[2].cap_secs, e[2].bytes_freed), (24 * 3600, 100.0));
        // Scaled up from a 1-in-1000 sample.
        let e = evaluate(&keys, 1000.0, &[3600]);
        assert_eq!(e[0].bytes_freed, 600_000.0);
        assert_eq!(e[0].keys_freed, 6000.0);
        // Bytes weight the share, not key counts.
        let keys = [key(10, 900), key(7200, 100)];
        let e = evaluate(&keys, 1.0, &[3600]);
        assert!((e[0].share_of_pattern - 0.1).abs() < 1e-12);
        assert!((e[0].read_within - 0.5).abs() < 1e-12);
    }

    #[test]
    fn no_idle_times_no_advice() {
        let k = KeyStat {
            idle: None,
            freq: Some(5),
            ..key(0, 10)
        };
        assert!(evaluate(&[k], 1.0, &STANDARD_CAPS).is_empty());
    }

    #[test]
    fn candidates_include_distribution_knees() {
        // p50 = 3 h, p90 = 3 d: both far from 1 h / 8 h / 24 h / 7 d.
        let mut idle = vec![3 * 3600; 50];
        idle.extend(vec![3 * 86_400; 45]);
        idle.extend(vec![30 * 86_400; 5]);
        idle.sort_unstable();
        assert_eq!(
            candidate_caps(&idle),
            vec![3600, 3 * 3600, 8 * 3600, 24 * 3600, 3 * 86_400, 7 * 86_400]
        );
        // Near a standard cap: not added.
        let idle = vec![7 * 3600; 10];
        assert_eq!(candidate_caps(&idle), STANDARD_CAPS.to_vec());
        // Idle under 5 minutes: not added.
        assert_eq!(candidate_caps(&[0, 1, 120]), STANDARD_CAPS.to_vec());
    }
}

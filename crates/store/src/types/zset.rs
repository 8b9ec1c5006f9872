//! Sorted sets: distinct members, each with a score, ordered by score then
//! member bytes.
//!
//! Two encodings, as in Redis 7.0. A small sorted set is a [`Listpack`] of
//! alternating members and scores kept in order (each score in as few
//! bytes as keep it exact, see [`encode_score`]); every operation walks it, O(n) for an n that
//! `zset-max-listpack-entries` and `zset-max-listpack-value` keep small. A
//! large one is a [`Table`] from member to score (ZSCORE in O(1)) beside a
//! [`RankTree`] ordered by `(score, member)` (rank and range in O(log n)).
//! The member bytes are held by both, as Redis's skiplist and dict share
//! one string: two copies cost more than a shared one but need no
//! reference counting. Conversion goes one way, towards the tree.

use std::borrow::Cow;

use super::ranktree::{compare, RankTree};
use super::{InlineBytes, Limits, Listpack, Table};
use crate::size_class::allocated;

/// A member and its score in the table of a large sorted set.
type Scored = (InlineBytes, f64);

/// The full structure of a large sorted set.
#[derive(Debug, Clone, Default)]
pub struct Sorted {
    scores: Table<Scored>,
    order: RankTree,
}

/// A sorted set in one of its encodings.
#[derive(Debug, Clone)]
pub enum ZSet {
    /// Members and scores alternating, in order.
    Pack(Listpack),
    /// A score table beside an order-statistic tree.
    Tree(Box<Sorted>),
}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::Pack(Listpack::new())
    }
}

impl PartialEq for ZSet {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.range(0, self.len()).eq(other.range(0, other.len()))
    }
}

/// A score as a pack stores it. Whole numbers of magnitude below 2^53 (all
/// exact in a double), the common case (counts, timestamps), are their
/// zigzag-encoded integer in 0 to 7 little-endian bytes, as Redis's
/// listpack stores integral scores as integers; any other score is its 8
/// bytes. The length tells the two apart. -0 becomes 0, as in Redis's
/// listpack (its skiplist keeps -0).
fn encode_score(score: f64, buf: &mut [u8; 8]) -> &[u8] {
    if score.fract() == 0.0 && score.abs() < (1u64 << 53) as f64 {
        let n = score as i64;
        let zigzag = ((n << 1) ^ (n >> 63)) as u64;
        let len = (64 - zigzag.leading_zeros() as usize).div_ceil(8);
        *buf = zigzag.to_le_bytes();
        &buf[..len]
    } else {
        *buf = score.to_le_bytes();
        &buf[..]
    }
}

/// The score [`encode_score`] stored.
fn score_of(bytes: &[u8]) -> f64 {
    let mut buf = [0u8; 8];
    buf[..bytes.len()].copy_from_slice(bytes);
    if bytes.len() == 8 {
        return f64::from_le_bytes(buf);
    }
    let zigzag = u64::from_le_bytes(buf);
    (((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64)) as f64
}

impl ZSet {
    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            ZSet::Pack(p) => p.len() / 2,
            ZSet::Tree(t) => t.scores.len(),
        }
    }

    /// Loads ahead what finding `member` will read (see `Table::prefetch`).
    pub(crate) fn prefetch_member(&self, member: &[u8]) {
        if let ZSet::Tree(t) = self {
            t.scores.prefetch(member);
        }
    }

    /// True when there is no member (the key is then deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        match self {
            ZSet::Pack(p) => allocated(p.heap_bytes()),
            ZSet::Tree(t) => {
                allocated(std::mem::size_of::<Sorted>())
                    + t.scores.heap_bytes()
                    + t.order.heap_bytes()
            }
        }
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        match self {
            ZSet::Pack(_) => "listpack",
            ZSet::Tree(_) => "skiplist",
        }
    }

    /// The pack's `(member, score)` pairs in order.
    fn pairs(pack: &Listpack) -> impl Iterator<Item = (&[u8], f64)> {
        let mut elements = pack.iter();
        std::iter::from_fn(move || Some((elements.next()?, score_of(elements.next()?))))
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Pack(p) => Self::pairs(p).find(|(m, _)| *m == member).map(|(_, s)| s),
            ZSet::Tree(t) => t.scores.get(member).map(|(_, s)| *s),
        }
    }

    /// Sets `member`'s score, adding it if new; returns its previous score.
    /// The score must not be NaN. A new member that the pack cannot take
    /// converts the set first, as Redis's zsetAdd does.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: &Limits) -> Option<f64> {
        let old = self.remove_scored(member);
        if old.is_none() && self.needs_tree_for(member, limits) {
            self.convert_to_tree();
        }
        match self {
            ZSet::Pack(p) => {
                let mut buf = [0; 8];
                let encoded = encode_score(score, &mut buf);
                let at = Self::pairs(p)
                    .take_while(|&(m, s)| compare((s, m), (score, member)).is_lt())
                    .count();
                p.splice(2 * at, 0, &[member, encoded]);
            }
            ZSet::Tree(t) => {
                t.scores.insert((member.into(), score));
                t.order.insert(member.into(), score);
            }
        }
        old
    }

    fn needs_tree_for(&self, member: &[u8], limits: &Limits) -> bool {
        matches!(self, ZSet::Pack(_))
            && (self.len() + 1 > limits.zset_max_listpack_entries
                || member.len() > limits.zset_max_listpack_value)
    }

    /// Leaves the compact encoding for the tree (what Redis calls a
    /// skiplist), as inserting past the thresholds does; SORT does it too,
    /// as Redis's does. Does nothing to a tree.
    pub fn convert_to_tree(&mut self) {
        if !matches!(self, ZSet::Pack(_)) {
            return;
        }
        let mut sorted = Sorted::default();
        for (member, score) in self.range(0, self.len()) {
            sorted
                .scores
                .insert((member.clone().into_owned().into(), score));
            sorted.order.insert(member.into_owned().into(), score);
        }
        *self = ZSet::Tree(Box::new(sorted));
    }

    /// Removes `member`; returns the score it had.
    fn remove_scored(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            ZSet::Pack(p) => {
                let (at, score) = Self::pairs(p)
                    .enumerate()
                    .find(|(_, (m, _))| *m == member)
                    .map(|(at, (_, s))| (at, s))?;
                p.splice(2 * at, 2, &[]);
                Some(score)
            }
            ZSet::Tree(t) => {
                let (_, score) = t.scores.remove(member)?;
                t.order.remove(member, score);
                Some(score)
            }
        }
    }

    /// Removes `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        self.remove_scored(member).is_some()
    }

    /// Removes the members with ranks `ranks` (ascending) and returns
    /// them in order: O(m log n) for m members in a large set.
    pub fn remove_ranks(&mut self, ranks: std::ops::Range<usize>) -> Vec<(Vec<u8>, f64)> {
        let removed: Vec<(Vec<u8>, f64)> = self
            .range(ranks.start, ranks.end)
            .map(|(m, s)| (m.into_owned(), s))
            .collect();
        match self {
            ZSet::Pack(p) => p.splice(2 * ranks.start, 2 * removed.len(), &[]),
            ZSet::Tree(_) => removed.iter().for_each(|(m, _)| {
                self.remove(m);
            }),
        }
        removed
    }

    /// One ZSCAN step (see [`Table::scan`]); a compact set is returned
    /// whole with cursor 0, as in Redis.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8], f64)) -> u64 {
        match self {
            ZSet::Tree(t) => t.scores.scan(cursor, count, |(m, s)| visit(m, *s)),
            ZSet::Pack(p) => {
                Self::pairs(p).for_each(|(m, s)| visit(m, s));
                0
            }
        }
    }

    /// Number of members for which `before` holds, given a prefix of the
    /// order (e.g. "score < 5"): where a range by score or lex starts.
    pub fn count_before(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            ZSet::Pack(p) => Self::pairs(p).take_while(|&(m, s)| before(s, m)).count(),
            ZSet::Tree(t) => t.order.count_before(before),
        }
    }

    /// The 0-based rank of `member` in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(self.count_before(|s, m| compare((s, m), (score, member)).is_lt()))
    }

    /// The members with ranks `start..end`, in ascending order.
    pub fn range(
        &self,
        start: usize,
        end: usize,
    ) -> Box<dyn Iterator<Item = (Cow<'_, [u8]>, f64)> + '_> {
        let n = end.saturating_sub(start);
        match self {
            ZSet::Pack(p) => Box::new(
                Self::pairs(p)
                    .skip(start)
                    .take(n)
                    .map(|(m, s)| (Cow::Borrowed(m), s)),
            ),
            ZSet::Tree(t) => Box::new(
                t.order
                    .iter_from(start)
                    .take(n)
                    .map(|(m, s)| (Cow::Borrowed(m), s)),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    #[test]
    fn pack_scores_round_trip_in_few_bytes() {
        let mut buf = [0; 8];
        for (score, len) in [
            (0.0, 0),
            (-0.0, 0),
            (5.0, 1),
            (-64.0, 1),
            (1.7e12, 6),
            (9_007_199_254_740_991.0, 7),
            (-9_007_199_254_740_991.0, 7),
            (9_007_199_254_740_992.0, 8),
            (0.5, 8),
            (f64::INFINITY, 8),
            (f64::NEG_INFINITY, 8),
        ] {
            let encoded = encode_score(score, &mut buf);
            assert_eq!(encoded.len(), len, "{score}");
            assert_eq!(score_of(encoded), if score == 0.0 { 0.0 } else { score });
        }
        assert!(score_of(encode_score(-0.0, &mut buf)).is_sign_positive());
    }

    /// Random operations on a sorted set and a map model agree on scores,
    /// ranks, ranges and counts, in both encodings and across conversion.
    #[test]
    fn matches_a_sorted_model_through_conversion() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let limits = Limits {
            zset_max_listpack_entries: 40,
            ..Limits::default()
        };
        let mut encodings = std::collections::HashSet::new();
        for _round in 0..20 {
            let mut zset = ZSet::default();
            let mut model: HashMap<Vec<u8>, f64> = HashMap::new();
            for _ in 0..1_500 {
                let member = format!("m{}", rng.gen_range(0..120)).into_bytes();
                let score = f64::from(rng.gen_range(-20..20)) / 2.0;
                if rng.gen_ratio(1, 50) {
                    let (a, b) = (rng.gen_range(0..=zset.len()), rng.gen_range(0..=zset.len()));
                    for (m, s) in zset.remove_ranks(a.min(b)..a.max(b)) {
                        assert_eq!(model.remove(&m), Some(s));
                    }
                } else if rng.gen_bool(0.6) {
                    assert_eq!(
                        zset.insert(&member, score, &limits),
                        model.insert(member, score)
                    );
                } else {
                    assert_eq!(zset.remove(&member), model.remove(&member).is_some());
                }
                encodings.insert(zset.encoding());
                let mut sorted: Vec<(Vec<u8>, f64)> =
                    model.iter().map(|(m, s)| (m.clone(), *s)).collect();
                sorted.sort_by(|a, b| compare((a.1, &a.0), (b.1, &b.0)));
                assert_eq!(zset.len(), sorted.len());
                let (start, end) = (
                    rng.gen_range(0..=sorted.len()),
                    rng.gen_range(0..=sorted.len()),
                );
                let got: Vec<(Vec<u8>, f64)> = zset
                    .range(start, end)
                    .map(|(m, s)| (m.into_owned(), s))
                    .collect();
                assert_eq!(got, sorted[start..end.max(start)]);
                let probe = format!("m{}", rng.gen_range(0..120)).into_bytes();
                let want = sorted.iter().position(|(m, _)| *m == probe);
                assert_eq!(zset.rank(&probe), want);
                assert_eq!(zset.score(&probe), model.get(&probe).copied());
                assert_eq!(
                    zset.count_before(|s, _| s < score),
                    sorted.iter().filter(|(_, s)| *s < score).count()
                );
            }
            for member in model.keys() {
                assert!(zset.remove(member));
            }
            if let ZSet::Tree(t) = &zset {
                assert!(t.order.is_empty());
                assert_eq!(t.order.heap_bytes(), 0, "an empty tree keeps no nodes");
            }
        }
        assert_eq!(encodings.len(), 2, "{encodings:?}");
    }
}

//! Sets: unordered collections of distinct byte strings.
//!
//! Three encodings, chosen as Redis 7.2 chooses them: an [`IntSet`] while
//! every member is an integer (up to `set-max-intset-entries`), a
//! [`Listpack`] while the set is small (up to `set-max-listpack-entries`
//! members of at most `set-max-listpack-value` bytes), and a [`Table`]
//! beyond. Conversions go one way, towards the table.

use std::borrow::Cow;

use rand::Rng;

use super::{InlineBytes, IntSet, Limits, Listpack, Table};
use crate::size_class::allocated;
use crate::value::parse_canonical_i64;

/// A set value in one of its encodings.
#[derive(Debug, Clone, PartialEq)]
pub enum Set {
    /// Integers only, sorted.
    Ints(IntSet),
    /// Few short members in one buffer.
    Pack(Listpack),
    /// A hash table of members.
    Table(Box<Table<InlineBytes>>),
}

impl Default for Set {
    fn default() -> Self {
        Set::Ints(IntSet::default())
    }
}

fn int_bytes(n: i64) -> Cow<'static, [u8]> {
    Cow::Owned(n.to_string().into_bytes())
}

impl Set {
    /// Number of members.
    pub fn len(&self) -> usize {
        match self {
            Set::Ints(s) => s.len(),
            Set::Pack(p) => p.len(),
            Set::Table(t) => t.len(),
        }
    }

    /// Loads ahead what finding `member` will read (see `Table::prefetch`).
    pub(crate) fn prefetch_member(&self, member: &[u8]) {
        if let Set::Table(t) = self {
            t.prefetch(member);
        }
    }

    /// True when the set has no member (it is then deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Set::Ints(s) => allocated(s.heap_bytes()),
            Set::Pack(p) => allocated(p.heap_bytes()),
            Set::Table(t) => allocated(std::mem::size_of::<Table<InlineBytes>>()) + t.heap_bytes(),
        }
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Ints(_) => "intset",
            Set::Pack(_) => "listpack",
            Set::Table(_) => "hashtable",
        }
    }

    /// True if `member` belongs to the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            Set::Ints(s) => parse_canonical_i64(member).is_some_and(|n| s.contains(n)),
            Set::Pack(p) => p.iter().any(|m| m == member),
            Set::Table(t) => t.get(member).is_some(),
        }
    }

    /// Adds `member`; returns true if it is new. A conversion happens
    /// before the member is added, into the encoding that can hold it.
    pub fn insert(&mut self, member: &[u8], limits: &Limits) -> bool {
        match self {
            Set::Ints(s) => match parse_canonical_i64(member) {
                Some(n) => {
                    let added = s.insert(n);
                    if s.len() > limits.set_max_intset_entries {
                        self.convert_to_table();
                    }
                    added
                }
                None => {
                    // The intset's longest member bounds every member's
                    // length, as Redis's check does.
                    let longest = s.as_slice().iter().map(|n| int_bytes(*n).len()).max();
                    let fits = s.len() < limits.set_max_listpack_entries
                        && member.len().max(longest.unwrap_or(0)) <= limits.set_max_listpack_value;
                    if fits {
                        let members: Vec<_> = self.iter().map(Cow::into_owned).collect();
                        let mut pack = Listpack::new();
                        pack.push(&members.iter().map(Vec::as_slice).collect::<Vec<_>>());
                        *self = Set::Pack(pack);
                    } else {
                        self.convert_to_table();
                    }
                    self.insert(member, limits)
                }
            },
            Set::Pack(p) => {
                if p.iter().any(|m| m == member) {
                    return false;
                }
                if p.len() < limits.set_max_listpack_entries
                    && member.len() <= limits.set_max_listpack_value
                {
                    p.push(&[member]);
                    return true;
                }
                self.convert_to_table();
                self.insert(member, limits)
            }
            Set::Table(t) => t.insert(member.into()).is_none(),
        }
    }

    fn convert_to_table(&mut self) {
        let mut table = Table::default();
        for member in self.iter() {
            table.insert(member.into_owned().into());
        }
        *self = Set::Table(Box::new(table));
    }

    /// Removes `member`; returns true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            Set::Ints(s) => parse_canonical_i64(member).is_some_and(|n| s.remove(n)),
            Set::Pack(p) => match p.iter().position(|m| m == member) {
                Some(at) => {
                    p.splice(at, 1, &[]);
                    true
                }
                None => false,
            },
            Set::Table(t) => t.remove(member).is_some(),
        }
    }

    /// Every member, in the encoding's order (ascending for integers).
    pub fn iter(&self) -> Box<dyn Iterator<Item = Cow<'_, [u8]>> + '_> {
        match self {
            Set::Ints(s) => Box::new(s.as_slice().iter().map(|&n| int_bytes(n))),
            Set::Pack(p) => Box::new(p.iter().map(Cow::Borrowed)),
            Set::Table(t) => Box::new(t.iter().map(|m| Cow::Borrowed(&**m))),
        }
    }

    /// A uniformly chosen member.
    pub fn random(&self, rng: &mut impl Rng) -> Option<Cow<'_, [u8]>> {
        match self {
            Set::Ints(s) if !s.is_empty() => {
                Some(int_bytes(s.as_slice()[rng.gen_range(0..s.len())]))
            }
            Set::Pack(p) if !p.is_empty() => p.get(rng.gen_range(0..p.len())).map(Cow::Borrowed),
            Set::Table(t) => t.random(rng).map(|m| Cow::Borrowed(&**m)),
            _ => None,
        }
    }

    /// Removes and returns a uniformly chosen member (SPOP).
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        match self {
            Set::Ints(s) if !s.is_empty() => {
                let at = rng.gen_range(0..s.len());
                Some(int_bytes(s.remove_at(at)).into_owned())
            }
            Set::Pack(p) if !p.is_empty() => {
                let at = rng.gen_range(0..p.len());
                let member = p.get(at)?.to_vec();
                p.splice(at, 1, &[]);
                Some(member)
            }
            Set::Table(t) => t.pop_random(rng).map(Vec::from),
            _ => None,
        }
    }

    /// One SSCAN step (see [`Table::scan`]); a compact set is returned
    /// whole with cursor 0, as in Redis.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8])) -> u64 {
        match self {
            Set::Table(t) => t.scan(cursor, count, |m| visit(m)),
            _ => {
                self.iter().for_each(|m| visit(&m));
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::collections::HashSet;

    /// Random operations on a set and a `HashSet` model agree through every
    /// conversion (intset → listpack → hashtable).
    #[test]
    fn matches_a_set_model_through_conversions() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let limits = Limits {
            set_max_intset_entries: 20,
            set_max_listpack_entries: 30,
            ..Limits::default()
        };
        let mut encodings = HashSet::new();
        for _round in 0..30 {
            let mut set = Set::default();
            let mut model: HashSet<Vec<u8>> = HashSet::new();
            let strings = rng.gen_bool(0.5);
            for _ in 0..300 {
                let member = match rng.gen_range(0..10) {
                    0 if strings => format!("s{}", rng.gen_range(0..50)),
                    _ => rng.gen_range(-30..30).to_string(),
                }
                .into_bytes();
                match rng.gen_range(0..4) {
                    0..=1 => assert_eq!(set.insert(&member, &limits), model.insert(member)),
                    2 => assert_eq!(set.remove(&member), model.remove(&member)),
                    _ => {
                        if let Some(m) = set.pop_random(&mut rng) {
                            assert!(model.remove(&m));
                        }
                    }
                }
                assert_eq!(set.len(), model.len());
                encodings.insert(set.encoding());
            }
            let members: HashSet<Vec<u8>> = set.iter().map(|m| m.into_owned()).collect();
            assert_eq!(members, model);
            assert!(model.iter().all(|m| set.contains(m)));
        }
        assert_eq!(encodings.len(), 3, "{encodings:?}");
    }
}

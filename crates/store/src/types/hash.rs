//! Hashes: field → value maps, compact while small.
//!
//! A new hash is a [`Listpack`] of alternating fields and values (insertion
//! order, as Redis's listpack hash). It becomes a [`Table`] for good once it
//! holds more than `hash-max-listpack-entries` fields or a field or value
//! longer than `hash-max-listpack-value` bytes, the moments Redis converts.

use rand::Rng;

use super::{InlineBytes, Limits, Listpack, Table};
use crate::size_class::allocated;

/// One field and its value in a large hash.
type Pair = (InlineBytes, InlineBytes);

/// A hash value in one of its encodings.
#[derive(Debug, Clone, PartialEq)]
pub enum Hash {
    /// Fields and values alternating in one buffer.
    Pack(Listpack),
    /// A hash table of pairs.
    Table(Box<Table<Pair>>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Pack(Listpack::new())
    }
}

impl Hash {
    /// Number of fields.
    pub fn len(&self) -> usize {
        match self {
            Hash::Pack(p) => p.len() / 2,
            Hash::Table(t) => t.len(),
        }
    }

    /// Loads ahead what finding `field` will read (see `Table::prefetch`).
    pub(crate) fn prefetch_field(&self, field: &[u8]) {
        if let Hash::Table(t) = self {
            t.prefetch(field);
        }
    }

    /// True when the hash has no field (it is then deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Hash::Pack(p) => allocated(p.heap_bytes()),
            Hash::Table(t) => allocated(std::mem::size_of::<Table<Pair>>()) + t.heap_bytes(),
        }
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Hash::Pack(_) => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }

    /// Index of `field` among the pack's pairs.
    fn pack_position(pack: &Listpack, field: &[u8]) -> Option<usize> {
        pack.iter().step_by(2).position(|f| f == field)
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            Hash::Pack(p) => {
                let at = Hash::pack_position(p, field)?;
                p.get(2 * at + 1)
            }
            Hash::Table(t) => t.get(field).map(|(_, v)| &**v),
        }
    }

    /// Sets `field` to `value`; returns true if the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: &Limits) -> bool {
        if let Hash::Pack(p) = self {
            let too_long = field.len().max(value.len()) > limits.hash_max_listpack_value;
            if !too_long {
                match Hash::pack_position(p, field) {
                    Some(at) => {
                        p.splice(2 * at + 1, 1, &[value]);
                        return false;
                    }
                    None if p.len() / 2 < limits.hash_max_listpack_entries => {
                        p.push(&[field, value]);
                        return true;
                    }
                    None => {}
                }
            }
            self.convert();
        }
        match self {
            Hash::Table(t) => t.insert((field.into(), value.into())).is_none(),
            Hash::Pack(_) => unreachable!("converted above"),
        }
    }

    fn convert(&mut self) {
        let Hash::Pack(p) = self else { return };
        let mut table = Table::default();
        let mut items = p.iter();
        while let (Some(f), Some(v)) = (items.next(), items.next()) {
            table.insert((f.into(), v.into()));
        }
        *self = Hash::Table(Box::new(table));
    }

    /// Removes `field`; returns true if it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Pack(p) => match Hash::pack_position(p, field) {
                Some(at) => {
                    p.splice(2 * at, 2, &[]);
                    true
                }
                None => false,
            },
            Hash::Table(t) => t.remove(field).is_some(),
        }
    }

    /// Every field and value, in the encoding's order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match self {
            Hash::Pack(p) => {
                let mut items = p.iter();
                Box::new(std::iter::from_fn(move || {
                    Some((items.next()?, items.next()?))
                }))
            }
            Hash::Table(t) => Box::new(t.iter().map(|(f, v)| (&**f, &**v))),
        }
    }

    /// A uniformly chosen field and its value.
    pub fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        match self {
            Hash::Pack(p) if !p.is_empty() => {
                let at = rng.gen_range(0..p.len() / 2);
                Some((p.get(2 * at)?, p.get(2 * at + 1)?))
            }
            Hash::Pack(_) => None,
            Hash::Table(t) => t.random(rng).map(|(f, v)| (&**f, &**v)),
        }
    }

    /// One HSCAN step (see [`Table::scan`]); a compact hash is returned
    /// whole with cursor 0, as in Redis.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        match self {
            Hash::Pack(_) => {
                self.iter().for_each(|(f, v)| visit(f, v));
                0
            }
            Hash::Table(t) => t.scan(cursor, count, |(f, v)| visit(f, v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::collections::HashMap;

    /// Random operations on a hash and on a `HashMap` model agree, through
    /// the conversion.
    #[test]
    fn matches_a_map_model_through_conversion() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let limits = Limits {
            hash_max_listpack_entries: 16,
            ..Limits::default()
        };
        for _round in 0..20 {
            let mut hash = Hash::default();
            let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            for _ in 0..500 {
                let field = format!("f{}", rng.gen_range(0..40)).into_bytes();
                let value = vec![b'v'; rng.gen_range(0..70)];
                match rng.gen_range(0..3) {
                    0 | 1 => assert_eq!(
                        hash.set(&field, &value, &limits),
                        model.insert(field, value).is_none()
                    ),
                    _ => assert_eq!(hash.remove(&field), model.remove(&field).is_some()),
                }
                assert_eq!(hash.len(), model.len());
                for (f, v) in &model {
                    assert_eq!(hash.get(f), Some(&v[..]));
                }
            }
            if model.len() > 16 {
                assert_eq!(hash.encoding(), "hashtable");
            }
        }
    }
}

//! Lists: sequences of byte strings with pushes and pops at both ends.
//!
//! Two encodings:
//!
//! - A [`Listpack`] while the list is small — within
//!   `list-max-listpack-size` (Redis's default -2: 8 KB of listpack; a
//!   positive value counts elements). One exactly-sized buffer: a byte or
//!   two per element beyond its bytes. Every change rebuilds the buffer,
//!   which the size bound keeps to a few kilobytes.
//! - A [`VecDeque`] of boxed elements past it: push and pop at either end
//!   in O(1) (amortised), LINDEX and LSET in O(1), LINSERT/LREM in O(n).
//!
//! Why a deque of elements rather than Redis's quicklist (a linked list of
//! listpack nodes): random access is O(1) instead of a walk over nodes,
//! the code is a fraction of the size, and accounting is exact and O(1) —
//! the element bytes as a running total plus the deque's capacity times
//! 16 bytes. The price is about 16 bytes of pointer and an allocator
//! header per element where a quicklist pays a byte or two; lists are
//! rarely the bulk of a cache's memory (queues stay short), and small
//! lists — the common case — stay in the compact encoding.
//!
//! A large list that shrinks below half the limit returns to a listpack,
//! as Redis 7.2 does; the half keeps a list hovering at the limit from
//! converting back and forth. OBJECT ENCODING says `quicklist` for both,
//! because Redis 7.0 keeps every list in a quicklist (a small list is one
//! listpack node there, as it is here).

use std::collections::VecDeque;

use super::{Limits, Listpack};
use crate::size_class::allocated;

/// An end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (index 0): LPUSH, LPOP.
    Left,
    /// The tail: RPUSH, RPOP.
    Right,
}

/// A list value in one of its encodings.
#[derive(Debug, Clone, PartialEq)]
pub enum List {
    /// Few short elements in one buffer.
    Pack(Listpack),
    /// A deque of elements.
    Deque(Box<Deque>),
}

/// The large encoding: elements and the bytes allocated for them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Deque {
    items: VecDeque<Box<[u8]>>,
    element_bytes: usize,
}

impl Deque {
    fn heap_bytes(&self) -> usize {
        allocated(std::mem::size_of::<Deque>())
            + allocated(self.items.capacity() * std::mem::size_of::<Box<[u8]>>())
            + self.element_bytes
    }

    fn take(&mut self, end: End) -> Option<Vec<u8>> {
        let element = match end {
            End::Left => self.items.pop_front(),
            End::Right => self.items.pop_back(),
        }?;
        self.element_bytes -= allocated(element.len());
        // Give memory back as a queue drains, without reallocating on
        // every pop.
        if self.items.len() < self.items.capacity() / 4 {
            self.items.shrink_to(self.items.len() * 2);
        }
        Some(element.into_vec())
    }
}

impl Default for List {
    fn default() -> Self {
        List::Pack(Listpack::new())
    }
}

impl Limits {
    /// True if a listpack of `count` elements and `bytes` bytes is within
    /// `list-max-listpack-size`: negative values -1..-5 bound the bytes
    /// (4, 8, 16, 32 or 64 KB), positive ones the count (with Redis's
    /// 8 KB safety limit).
    fn list_fits(&self, count: usize, bytes: usize) -> bool {
        const SAFETY_LIMIT: usize = 8192;
        match self.list_max_listpack_size {
            n if n < 0 => bytes <= 4096 << (n.unsigned_abs() - 1).min(4),
            n => count <= n as usize && bytes <= SAFETY_LIMIT,
        }
    }
}

impl List {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            List::Pack(p) => p.len(),
            List::Deque(d) => d.items.len(),
        }
    }

    /// True when the list has no element (it is then deleted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        match self {
            List::Pack(p) => allocated(p.heap_bytes()),
            List::Deque(d) => d.heap_bytes(),
        }
    }

    /// Redis 7.0's OBJECT ENCODING name: every list is a quicklist there.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// True while in the compact encoding (for tests and introspection).
    pub fn is_compact(&self) -> bool {
        matches!(self, List::Pack(_))
    }

    /// The element at `index` (0-based from the head).
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        match self {
            List::Pack(p) => p.get(index),
            List::Deque(d) => d.items.get(index).map(|e| &**e),
        }
    }

    /// Elements from the head.
    pub fn iter(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            List::Pack(p) => Box::new(p.iter()),
            List::Deque(d) => Box::new(d.items.iter().map(|e| &**e)),
        }
    }

    /// Elements from the tail. A listpack is walked forwards once and
    /// reversed; it is small by construction.
    pub fn iter_rev(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match self {
            List::Pack(p) => Box::new(p.iter().collect::<Vec<_>>().into_iter().rev()),
            List::Deque(d) => Box::new(d.items.iter().rev().map(|e| &**e)),
        }
    }

    /// Adds `element` at `end`.
    pub fn push(&mut self, end: End, element: &[u8], limits: &Limits) {
        match self {
            List::Pack(p) => {
                let at = match end {
                    End::Left => 0,
                    End::Right => p.len(),
                };
                p.splice(at, 0, &[element]);
            }
            List::Deque(d) => {
                d.element_bytes += allocated(element.len());
                match end {
                    End::Left => d.items.push_front(element.into()),
                    End::Right => d.items.push_back(element.into()),
                }
            }
        }
        self.settle(limits);
    }

    /// Removes and returns the element at `end`.
    pub fn pop(&mut self, end: End, limits: &Limits) -> Option<Vec<u8>> {
        let element = match self {
            List::Pack(p) if p.is_empty() => None,
            List::Pack(p) => {
                let at = match end {
                    End::Left => 0,
                    End::Right => p.len() - 1,
                };
                let element = p.get(at).map(<[u8]>::to_vec);
                p.splice(at, 1, &[]);
                element
            }
            List::Deque(d) => d.take(end),
        };
        self.settle(limits);
        element
    }

    /// Replaces the element at `index`; false if there is none.
    pub fn set(&mut self, index: usize, element: &[u8], limits: &Limits) -> bool {
        if index >= self.len() {
            return false;
        }
        match self {
            List::Pack(p) => p.splice(index, 1, &[element]),
            List::Deque(d) => {
                let old = std::mem::replace(&mut d.items[index], element.into());
                d.element_bytes = d.element_bytes - allocated(old.len()) + allocated(element.len());
            }
        }
        self.settle(limits);
        true
    }

    /// Inserts `element` so that it ends up at `index` (0..=len).
    pub fn insert(&mut self, index: usize, element: &[u8], limits: &Limits) {
        match self {
            List::Pack(p) => p.splice(index, 0, &[element]),
            List::Deque(d) => {
                d.element_bytes += allocated(element.len());
                d.items.insert(index, element.into());
            }
        }
        self.settle(limits);
    }

    /// Keeps only the elements for which `keep(index, element)` is true,
    /// in one pass (LREM, LTRIM); returns how many were removed.
    pub fn retain(&mut self, limits: &Limits, mut keep: impl FnMut(usize, &[u8]) -> bool) -> usize {
        let before = self.len();
        match self {
            List::Pack(p) => {
                let kept: Vec<&[u8]> = p
                    .iter()
                    .enumerate()
                    .filter(|(i, e)| keep(*i, e))
                    .map(|(_, e)| e)
                    .collect();
                let mut pack = Listpack::new();
                pack.push(&kept);
                *p = pack;
            }
            List::Deque(d) => {
                let (mut index, mut removed_bytes) = (0, 0);
                d.items.retain(|e| {
                    let kept = keep(index, e);
                    index += 1;
                    if !kept {
                        removed_bytes += allocated(e.len());
                    }
                    kept
                });
                d.element_bytes -= removed_bytes;
                d.items.shrink_to(d.items.len() * 2);
            }
        }
        self.settle(limits);
        before - self.len()
    }

    /// Converts to the encoding the limits call for: a listpack past its
    /// limit becomes a deque; a deque well under it (half the limit, by an
    /// upper bound of its listpack size) becomes a listpack again.
    fn settle(&mut self, limits: &Limits) {
        match self {
            List::Pack(p) if !limits.list_fits(p.len(), p.heap_bytes()) => {
                let items: VecDeque<Box<[u8]>> = p.iter().map(Box::from).collect();
                let element_bytes = items.iter().map(|e| allocated(e.len())).sum();
                *self = List::Deque(Box::new(Deque {
                    items,
                    element_bytes,
                }));
            }
            List::Deque(d) => {
                // The elements' allocations are at least their lengths;
                // at most 3 bytes of length per element and of count.
                let bound = d.element_bytes + 3 * d.items.len() + 3;
                if limits.list_fits(2 * d.items.len(), 2 * bound) {
                    let elements: Vec<&[u8]> = d.items.iter().map(|e| &**e).collect();
                    let mut pack = Listpack::new();
                    pack.push(&elements);
                    *self = List::Pack(pack);
                }
            }
            List::Pack(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random operations on a list and a `VecDeque` model agree, through
    /// conversions both ways, and the running byte count stays exact.
    #[test]
    fn matches_a_deque_model_through_conversions() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(17);
        for size in [-1, -2, 5, 0] {
            let limits = Limits {
                list_max_listpack_size: size,
                ..Limits::default()
            };
            let (mut compact, mut full) = (false, false);
            for _round in 0..10 {
                let mut list = List::default();
                let mut model: VecDeque<Vec<u8>> = VecDeque::new();
                for _ in 0..2_000 {
                    let element = vec![b'a' + rng.gen_range(0..3); rng.gen_range(0..120)];
                    let end = if rng.gen_bool(0.5) {
                        End::Left
                    } else {
                        End::Right
                    };
                    // Grow more than shrink in the first half of a round.
                    match rng.gen_range(0..9) {
                        0..=3 => {
                            list.push(end, &element, &limits);
                            match end {
                                End::Left => model.push_front(element),
                                End::Right => model.push_back(element),
                            }
                        }
                        4 | 5 => {
                            let want = match end {
                                End::Left => model.pop_front(),
                                End::Right => model.pop_back(),
                            };
                            assert_eq!(list.pop(end, &limits), want);
                        }
                        6 if !model.is_empty() => {
                            let at = rng.gen_range(0..model.len());
                            assert!(list.set(at, &element, &limits));
                            model[at] = element;
                        }
                        7 => {
                            let at = rng.gen_range(0..=model.len());
                            list.insert(at, &element, &limits);
                            model.insert(at, element);
                        }
                        _ => {
                            let drop_len = rng.gen_range(0..120);
                            let removed = list.retain(&limits, |_, e| e.len() != drop_len);
                            let before = model.len();
                            model.retain(|e| e.len() != drop_len);
                            assert_eq!(removed, before - model.len());
                        }
                    }
                    assert_eq!(list.len(), model.len());
                    if let List::Deque(d) = &list {
                        let recount: usize = d.items.iter().map(|e| allocated(e.len())).sum();
                        assert_eq!(d.element_bytes, recount);
                    }
                    compact |= list.is_compact() && list.len() > 1;
                    full |= !list.is_compact();
                }
                assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
                assert!(list.iter_rev().eq(model.iter().rev().map(Vec::as_slice)));
                for (i, e) in model.iter().enumerate() {
                    assert_eq!(list.get(i), Some(&e[..]));
                }
            }
            assert!(full, "size {size} reached the deque");
            assert_eq!(compact, size != 0, "size {size}");
        }
    }

    #[test]
    fn limits_follow_redis_list_max_listpack_size() {
        let at = |size| Limits {
            list_max_listpack_size: size,
            ..Limits::default()
        };
        assert!(at(-2).list_fits(1000, 8192));
        assert!(!at(-2).list_fits(1, 8193));
        assert!(at(-5).list_fits(1, 65536));
        assert!(at(-9).list_fits(1, 65536), "below -5 counts as -5");
        assert!(at(128).list_fits(128, 100));
        assert!(!at(128).list_fits(129, 100));
        assert!(!at(128).list_fits(2, 9000));
    }
}

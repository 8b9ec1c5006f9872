//! A compact sequence of byte strings in one exactly-sized allocation, as
//! Redis's listpack keeps small collections.
//!
//! Layout: the element count as a LEB128 varint, then each element as its
//! length (LEB128) followed by its bytes. An empty listpack owns no heap.
//! Small collections (a few dozen short elements) cost their bytes plus a
//! byte or two per element, instead of two pointers, a hash slot and an
//! allocator header per element in a hash table.
//!
//! Trade-off: lookups walk the buffer and every change rebuilds it, O(n) in
//! the collection's bytes. The collection types convert to a full structure
//! past small thresholds (`hash-max-listpack-entries` and friends), so n
//! stays small enough that the walk is a few cache lines.

/// A compact sequence of byte strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listpack {
    buf: Box<[u8]>,
}

pub(super) fn varint_len(mut n: usize) -> usize {
    let mut bytes = 1;
    while n >= 0x80 {
        n >>= 7;
        bytes += 1;
    }
    bytes
}

fn write_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads a varint at `at`; returns the value and the offset after it.
pub(super) fn read_varint(buf: &[u8], mut at: usize) -> (usize, usize) {
    let (mut n, mut shift) = (0usize, 0);
    loop {
        let b = buf[at];
        at += 1;
        n |= ((b & 0x7f) as usize) << shift;
        if b < 0x80 {
            return (n, at);
        }
        shift += 7;
    }
}

impl Listpack {
    /// Moves the buffer where `mover` allocates, if it asks to (see
    /// `crate::defrag`); true if it moved.
    pub(crate) fn relocate(&mut self, mover: &mut dyn crate::defrag::Relocate) -> bool {
        crate::defrag::relocate_slice(&mut self.buf, mover)
    }

    /// An empty listpack (no allocation).
    pub fn new() -> Listpack {
        Listpack::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        if self.buf.is_empty() {
            0
        } else {
            read_varint(&self.buf, 0).0
        }
    }

    /// True when there is no element.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Heap bytes owned: the buffer, exactly sized.
    pub fn heap_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Offset of the first element.
    fn start(&self) -> usize {
        if self.buf.is_empty() {
            0
        } else {
            read_varint(&self.buf, 0).1
        }
    }

    /// The elements in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            buf: &self.buf,
            at: self.start(),
        }
    }

    /// The element at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        self.iter().nth(index)
    }

    /// Byte offset where element `index` starts (the end for `len()`).
    fn offset_of(&self, index: usize) -> usize {
        let mut at = self.start();
        for _ in 0..index {
            let (n, data) = read_varint(&self.buf, at);
            at = data + n;
        }
        at
    }

    /// Replaces elements `index..index + remove` with `insert`, rebuilding
    /// the buffer at its exact new size.
    pub fn splice(&mut self, index: usize, remove: usize, insert: &[&[u8]]) {
        let count = self.len() - remove + insert.len();
        let (from, to) = (self.offset_of(index), self.offset_of(index + remove));
        if count == 0 {
            self.buf = Box::default();
            return;
        }
        let body = self.start();
        let added: usize = insert.iter().map(|e| varint_len(e.len()) + e.len()).sum();
        let mut out =
            Vec::with_capacity(varint_len(count) + self.buf.len() - body - (to - from) + added);
        write_varint(&mut out, count);
        out.extend_from_slice(&self.buf[body..from]);
        for element in insert {
            write_varint(&mut out, element.len());
            out.extend_from_slice(element);
        }
        out.extend_from_slice(&self.buf[to..]);
        self.buf = out.into_boxed_slice();
    }

    /// Appends `elements` at the end.
    pub fn push(&mut self, elements: &[&[u8]]) {
        self.splice(self.len(), 0, elements);
    }
}

/// Iterator over a listpack's elements.
pub struct Iter<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.at >= self.buf.len() {
            return None;
        }
        let (n, data) = read_varint(self.buf, self.at);
        self.at = data + n;
        Some(&self.buf[data..data + n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_matches_a_vec_model() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut pack = Listpack::new();
        let mut model: Vec<Vec<u8>> = Vec::new();
        for _ in 0..5_000 {
            let index = rng.gen_range(0..=model.len());
            let remove = rng.gen_range(0..=(model.len() - index).min(2));
            let insert: Vec<Vec<u8>> = (0..rng.gen_range(0..3))
                .map(|_| vec![b'x'; rng.gen_range(0..200)])
                .collect();
            let refs: Vec<&[u8]> = insert.iter().map(Vec::as_slice).collect();
            pack.splice(index, remove, &refs);
            model.splice(index..index + remove, insert);
            assert_eq!(pack.len(), model.len());
            assert!(pack.iter().eq(model.iter().map(Vec::as_slice)));
        }
        pack.splice(0, pack.len(), &[]);
        assert_eq!(pack.heap_bytes(), 0);
    }
}

//! A set of integers as a sorted array, as Redis's intset: 8 bytes per
//! member, membership by binary search, members returned in order.

/// A sorted array of distinct integers in one exactly-sized allocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntSet {
    values: Box<[i64]>,
}

impl IntSet {
    /// Moves the array where `mover` allocates, if it asks to (see
    /// `crate::defrag`); true if it moved.
    pub(crate) fn relocate(&mut self, mover: &mut dyn crate::defrag::Relocate) -> bool {
        crate::defrag::relocate_slice(&mut self.values, mover)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Heap bytes owned.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.values)
    }

    /// True if `n` is a member.
    pub fn contains(&self, n: i64) -> bool {
        self.values.binary_search(&n).is_ok()
    }

    /// Adds `n`; false if it was there.
    pub fn insert(&mut self, n: i64) -> bool {
        let Err(at) = self.values.binary_search(&n) else {
            return false;
        };
        let mut v = Vec::with_capacity(self.values.len() + 1);
        v.extend_from_slice(&self.values[..at]);
        v.push(n);
        v.extend_from_slice(&self.values[at..]);
        self.values = v.into_boxed_slice();
        true
    }

    /// Removes `n`; false if it was not there.
    pub fn remove(&mut self, n: i64) -> bool {
        let Ok(at) = self.values.binary_search(&n) else {
            return false;
        };
        self.remove_at(at);
        true
    }

    /// Removes and returns the member at `index` (in sorted order).
    pub fn remove_at(&mut self, index: usize) -> i64 {
        let n = self.values[index];
        let mut v = self.values.to_vec();
        v.remove(index);
        self.values = v.into_boxed_slice();
        n
    }

    /// The members in ascending order.
    pub fn as_slice(&self) -> &[i64] {
        &self.values
    }
}

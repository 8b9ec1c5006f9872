//! Byte strings kept in place when short: the members of large hashes,
//! sets and sorted sets.
//!
//! A member of a large collection is looked up by comparing its bytes. As a
//! `Box<[u8]>` those bytes are one more allocation away from the slot or
//! tree node that holds the member: a dependent cache miss on every
//! lookup, every step of a sorted set's tree walk, and an allocation of at
//! least 8 bytes (usually 32) per member. Most members are short (field
//! names, ids, counters), so a member of up to [`INLINE_MAX`] bytes lives
//! inside the 24 bytes of the value itself; a longer one is boxed as
//! before. The price is 8 bytes more than a `Box<[u8]>` for a long member.

use std::ops::Deref;

use crate::size_class::allocated;

/// The longest byte string stored in place.
pub const INLINE_MAX: usize = 22;

/// A byte string, in place up to [`INLINE_MAX`] bytes, else boxed.
#[derive(Clone)]
pub struct InlineBytes(Repr);

/// Which of the two a byte string is follows from its length alone, so
/// equal bytes always have equal representations.
#[derive(Clone)]
enum Repr {
    /// Short: its length and bytes, in place.
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    /// Long: on the heap.
    Boxed(Box<[u8]>),
}

// A tag byte, a length byte and 22 bytes: the same 24 bytes whichever the
// variant, and `Option` finds room in the tag.
const _: () = assert!(std::mem::size_of::<InlineBytes>() == 24);
const _: () = assert!(std::mem::size_of::<Option<InlineBytes>>() == 24);

impl InlineBytes {
    /// Heap bytes owned: none in place, the allocator's size class boxed.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Boxed(b) => allocated(b.len()),
        }
    }
}

impl Default for InlineBytes {
    fn default() -> Self {
        InlineBytes::from(&[][..])
    }
}

impl From<&[u8]> for InlineBytes {
    fn from(b: &[u8]) -> Self {
        if b.len() <= INLINE_MAX {
            let mut bytes = [0; INLINE_MAX];
            bytes[..b.len()].copy_from_slice(b);
            InlineBytes(Repr::Inline {
                len: b.len() as u8,
                bytes,
            })
        } else {
            InlineBytes(Repr::Boxed(b.into()))
        }
    }
}

impl From<Vec<u8>> for InlineBytes {
    fn from(v: Vec<u8>) -> Self {
        if v.len() <= INLINE_MAX {
            InlineBytes::from(&v[..])
        } else {
            InlineBytes(Repr::Boxed(v.into_boxed_slice()))
        }
    }
}

impl From<InlineBytes> for Vec<u8> {
    fn from(b: InlineBytes) -> Self {
        match b.0 {
            Repr::Inline { len, bytes } => bytes[..len as usize].to_vec(),
            Repr::Boxed(b) => b.into_vec(),
        }
    }
}

impl Deref for InlineBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Boxed(b) => b,
        }
    }
}

impl PartialEq for InlineBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for InlineBytes {}

impl std::hash::Hash for InlineBytes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl std::fmt::Debug for InlineBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_in_place_long_boxed_and_bytes_kept() {
        for len in [0, 1, INLINE_MAX, INLINE_MAX + 1, 100] {
            let bytes: Vec<u8> = (0..len as u8).collect();
            let from_slice = InlineBytes::from(&bytes[..]);
            let from_vec = InlineBytes::from(bytes.clone());
            assert_eq!(&*from_slice, &bytes[..]);
            assert_eq!(from_slice, from_vec);
            assert_eq!(Vec::from(from_vec), bytes);
            let boxed = len > INLINE_MAX;
            assert_eq!(matches!(from_slice.0, Repr::Boxed(_)), boxed);
            assert_eq!(
                from_slice.heap_bytes(),
                if boxed { allocated(len) } else { 0 }
            );
        }
    }
}

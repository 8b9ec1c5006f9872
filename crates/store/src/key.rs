//! A key and its hash, worked out once per command.
//!
//! Every shard of a store hashes keys with the store's one hasher: bits
//! 32.. of a key's hash choose its shard, the low bits its index bucket
//! and the top bits the bucket's tag. A command that loads its key ahead,
//! locks the key's shard and looks the key up used to hash it four times,
//! some 80 instructions each for a 20-byte key: a twelfth of a GET. A
//! [`Key`] carries the hash from the first of those steps to the last.
//!
//! Whatever takes a key takes an [`AsKey`]: a [`Key`], hashed already, or
//! any reference to bytes, hashed where it is used. Commands on the
//! request path make a [`Key`] once (`Db::key`); the rest pass bytes.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;

/// A key's bytes and its hash under the store's hasher.
#[derive(Clone, Copy, Debug)]
pub struct Key<'k> {
    bytes: &'k [u8],
    hash: u64,
}

impl<'k> Key<'k> {
    pub(crate) fn new(bytes: &'k [u8], hasher: &RandomState) -> Key<'k> {
        Key {
            bytes,
            hash: hasher.hash_one(bytes),
        }
    }

    /// `bytes`, whose hash is `hash`.
    pub(crate) fn with_hash(bytes: &'k [u8], hash: u64) -> Key<'k> {
        Key { bytes, hash }
    }

    /// The key itself.
    pub fn bytes(self) -> &'k [u8] {
        self.bytes
    }

    pub(crate) fn hash(self) -> u64 {
        self.hash
    }
}

/// A key, hashed or not. A [`Key`] is used as it is; bytes are hashed.
///
/// A `&Key` is deliberately not one: it would hash again unseen.
pub trait AsKey<'k>: Copy {
    /// The key with its hash under `hasher`.
    fn hashed(self, hasher: &RandomState) -> Key<'k>;
}

impl<'k> AsKey<'k> for Key<'k> {
    fn hashed(self, hasher: &RandomState) -> Key<'k> {
        debug_assert_eq!(
            self.hash,
            hasher.hash_one(self.bytes),
            "hashed by another store"
        );
        self
    }
}

impl<'k, T: AsRef<[u8]> + ?Sized> AsKey<'k> for &'k T {
    fn hashed(self, hasher: &RandomState) -> Key<'k> {
        Key::new(self.as_ref(), hasher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_a_key_hash_alike() {
        let hasher = RandomState::default();
        let key = Key::new(b"user:1", &hasher);
        assert_eq!(key.hashed(&hasher).hash(), key.hash());
        assert_eq!(b"user:1".hashed(&hasher).hash(), key.hash());
        assert_eq!(b"user:1".to_vec().hashed(&hasher).hash(), key.hash());
        assert_eq!(b"user:1"[..].hashed(&hasher).hash(), key.hash());
        assert_ne!(b"user:2".hashed(&hasher).hash(), key.hash());
    }
}

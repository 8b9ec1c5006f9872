use crate::access::Access;
use crate::value::{Value, ValueRef};

/// One key and what the keyspace knows about it.
#[derive(Debug)]
pub struct Entry {
    key: Box<[u8]>,
    value: Value,
    /// Absolute deadline in Unix milliseconds; 0 means no TTL. Kept in the
    /// entry (not a side table) so a lookup answers TTL questions without a
    /// second probe, and an expiry index can point back here.
    expire_at_ms: u64,
    access: Access,
}

impl Entry {
    pub(crate) fn new(
        key: Box<[u8]>,
        value: Value,
        expire_at_ms: Option<u64>,
        access: Access,
    ) -> Entry {
        Entry {
            key,
            value,
            expire_at_ms: expire_at_ms.unwrap_or(0),
            access,
        }
    }

    /// The key's bytes.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The stored value.
    pub fn value(&self) -> ValueRef<'_> {
        self.value.view()
    }

    /// The value, for in-place changes.
    pub(crate) fn value_mut(&mut self) -> &mut Value {
        &mut self.value
    }

    /// Recency/frequency for OBJECT and eviction.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The deadline in Unix milliseconds, if the key has a TTL.
    pub fn expire_at_ms(&self) -> Option<u64> {
        (self.expire_at_ms != 0).then_some(self.expire_at_ms)
    }

    pub(crate) fn set_expire_at_ms(&mut self, at: Option<u64>) {
        self.expire_at_ms = at.unwrap_or(0);
    }

    /// True once the deadline has passed: the key no longer exists for any
    /// reader, whether or not it has been reclaimed yet.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// Heap bytes this entry owns outside its slot: key and value.
    pub fn heap_bytes(&self) -> usize {
        self.key.len() + self.value.heap_bytes()
    }

    pub(crate) fn into_parts(self) -> (Box<[u8]>, Value) {
        (self.key, self.value)
    }
}

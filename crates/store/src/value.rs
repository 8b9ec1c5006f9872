//! Values and their encodings.
//!
//! A value is a string or one of the collection types in [`crate::types`].
//! Commands reach the type they expect through [`Value::as_str`],
//! [`Value::as_hash`] and friends, which answer `None` for another type, so
//! the WRONGTYPE decision is made in one place per type.

use crate::types::{Hash, List, Set, ZSet};

/// Strings shorter than this are "embstr" in Redis; OBJECT ENCODING reports
/// the same names so tools written against Redis read keel the same way.
const EMBSTR_MAX_LEN: usize = 44;

/// Integers below this are shared objects in Redis (OBJECT REFCOUNT says
/// 2147483647 for them unless an LRU/LFU policy needs per-key metadata).
pub const SHARED_INTEGERS: i64 = 10_000;

/// A stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string, as Redis's string type (binary-safe, up to 512 MB).
    Str(Str),
    /// A hash of fields to values.
    Hash(Hash),
    /// A set of distinct members. Boxed: its three encodings need a tag
    /// beside two words, which would make every value (strings included)
    /// a word larger; a set pays one small allocation instead.
    Set(Box<Set>),
    /// A list of elements.
    List(List),
    /// A sorted set. Boxed for the same reason as sets.
    ZSet(Box<ZSet>),
}

/// A string value in one of its encodings.
#[derive(Debug, Clone, PartialEq)]
pub enum Str {
    /// The canonical decimal form of an `i64`: stored as the number, as
    /// Redis's "int" encoding does, so counters cost no heap.
    Int(i64),
    /// Bytes written once (SET and friends): exactly sized.
    Fixed(Box<[u8]>),
    /// Bytes grown in place (APPEND, SETRANGE): spare capacity amortises
    /// repeated appends. Redis calls this "raw".
    Growable(Vec<u8>),
}

impl Str {
    /// Stores `bytes` in the most compact encoding that keeps them exactly.
    pub fn from_bytes(bytes: &[u8]) -> Str {
        match parse_canonical_i64(bytes) {
            Some(n) => Str::Int(n),
            None => Str::Fixed(bytes.into()),
        }
    }

    /// The string's length in bytes, without materialising it.
    pub fn len(&self) -> usize {
        match self {
            Str::Int(n) => decimal_len(*n),
            Str::Fixed(b) => b.len(),
            Str::Growable(v) => v.len(),
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the string; integers are formatted on the fly.
    pub fn to_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Str::Int(n) => std::borrow::Cow::Owned(n.to_string().into_bytes()),
            Str::Fixed(b) => std::borrow::Cow::Borrowed(b),
            Str::Growable(v) => std::borrow::Cow::Borrowed(v),
        }
    }

    /// The integer value if the string is one, as INCR needs it.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Str::Int(n) => Some(*n),
            Str::Fixed(b) => parse_canonical_i64(b),
            Str::Growable(v) => parse_canonical_i64(v),
        }
    }

    /// Turns this string into a growable buffer for in-place edits.
    pub fn make_growable(&mut self) -> &mut Vec<u8> {
        if !matches!(self, Str::Growable(_)) {
            *self = Str::Growable(self.to_bytes().into_owned());
        }
        match self {
            Str::Growable(v) => v,
            _ => unreachable!("converted just above"),
        }
    }

    /// Heap bytes owned by this string.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Str::Int(_) => 0,
            Str::Fixed(b) => b.len(),
            Str::Growable(v) => v.capacity(),
        }
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        match self {
            Str::Int(_) => "int",
            Str::Fixed(b) if b.len() <= EMBSTR_MAX_LEN => "embstr",
            _ => "raw",
        }
    }
}

/// Typed access to a value: `as_*` and `as_*_mut` answer `None` for a value
/// of another type, and the caller replies WRONGTYPE.
macro_rules! typed_access {
    ($($variant:ident, $ty:ty, $get:ident, $get_mut:ident;)*) => {
        impl Value {
            $(
                #[doc = concat!("The ", stringify!($variant), " inside, or `None` for another type.")]
                pub fn $get(&self) -> Option<&$ty> {
                    match self {
                        Value::$variant(v) => Some(std::borrow::Borrow::borrow(v)),
                        _ => None,
                    }
                }

                #[doc = concat!("Mutable access to the ", stringify!($variant), " inside.")]
                pub fn $get_mut(&mut self) -> Option<&mut $ty> {
                    match self {
                        Value::$variant(v) => Some(std::borrow::BorrowMut::borrow_mut(v)),
                        _ => None,
                    }
                }
            )*
        }
    };
}

typed_access! {
    Str, Str, as_str, as_str_mut;
    Hash, Hash, as_hash, as_hash_mut;
    Set, Set, as_set, as_set_mut;
    List, List, as_list, as_list_mut;
    ZSet, ZSet, as_zset, as_zset_mut;
}

impl Value {
    /// The name TYPE replies with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::List(_) => "list",
            Value::ZSet(_) => "zset",
        }
    }

    /// The name OBJECT ENCODING replies with.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::List(l) => l.encoding(),
            Value::ZSet(z) => z.encoding(),
        }
    }

    /// Heap bytes owned by this value, for memory accounting. O(1): every
    /// collection keeps its size as it changes.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_bytes(),
            Value::Hash(h) => h.heap_bytes(),
            Value::Set(s) => std::mem::size_of::<Set>() + s.heap_bytes(),
            Value::List(l) => l.heap_bytes(),
            Value::ZSet(z) => std::mem::size_of::<ZSet>() + z.heap_bytes(),
        }
    }

    /// True for a collection with no element left: such a key is deleted,
    /// as Redis never keeps an empty collection.
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }
}

/// Parses `bytes` as an `i64` only if they are exactly its canonical decimal
/// form (no sign on zero, no leading zeros or spaces), so that storing the
/// number and formatting it back gives the same bytes.
pub fn parse_canonical_i64(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || bytes[0] == b'-') {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

fn decimal_len(n: i64) -> usize {
    let sign = usize::from(n < 0);
    let mut v = n.unsigned_abs();
    let mut digits = 1;
    while v >= 10 {
        v /= 10;
        digits += 1;
    }
    sign + digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_integers_only() {
        assert_eq!(parse_canonical_i64(b"123"), Some(123));
        assert_eq!(parse_canonical_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"0123"[..],
            b"-0",
            b"+1",
            b" 1",
            b"",
            b"-",
            b"99999999999999999999",
            b"1.0",
        ] {
            assert_eq!(parse_canonical_i64(bad), None, "{bad:?}");
        }
    }

    /// Every key pays for the value enum in its slot: it must stay at three
    /// words, so large variants are boxed.
    #[test]
    fn value_stays_three_words() {
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }

    #[test]
    fn encodings_and_lengths() {
        assert_eq!(Str::from_bytes(b"-42").encoding(), "int");
        assert_eq!(Str::from_bytes(b"-42").len(), 3);
        assert_eq!(Str::from_bytes(&[b'x'; 44]).encoding(), "embstr");
        assert_eq!(Str::from_bytes(&[b'x'; 45]).encoding(), "raw");
        let mut s = Str::from_bytes(b"12");
        s.make_growable().extend_from_slice(b"3");
        assert_eq!(s.encoding(), "raw");
        assert_eq!(s.as_i64(), Some(123));
    }
}

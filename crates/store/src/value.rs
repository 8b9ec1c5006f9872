//! Values and their encodings.
//!
//! A value is a string or one of the collection types in [`crate::types`]
//! (streams included).
//! Commands reach the type they expect through [`Value::as_str`],
//! [`Value::as_hash`] and friends, which answer `None` for another type, so
//! the WRONGTYPE decision is made in one place per type.

use std::borrow::Cow;

use crate::defrag::{relocate_box, relocate_slice, relocate_vec, Relocate};
use crate::size_class::allocated;
use crate::types::{Hash, List, Set, Stream, ZSet};

/// Strings shorter than this are "embstr" in Redis; OBJECT ENCODING reports
/// the same names so tools written against Redis read keel the same way.
const EMBSTR_MAX_LEN: usize = 44;

/// The most spare room a growing string is given at once, as Redis's
/// `SDS_MAX_PREALLOC`.
const MAX_PREALLOC: usize = 1 << 20;

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
    /// A stream. Boxed: it is many words.
    Stream(Box<Stream>),
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

    /// A borrowed view of this string, which carries every read below.
    pub fn view(&self) -> StrRef<'_> {
        match self {
            Str::Int(n) => StrRef::Int(*n),
            Str::Fixed(b) => StrRef::Fixed(b),
            Str::Growable(v) => StrRef::Growable(v),
        }
    }

    /// The string's length in bytes, without materialising it.
    pub fn len(&self) -> usize {
        self.view().len()
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of the string; integers are formatted on the fly.
    pub fn to_bytes(&self) -> Cow<'_, [u8]> {
        self.view().to_bytes()
    }

    /// The integer value if the string is one, as INCR needs it.
    pub fn as_i64(&self) -> Option<i64> {
        self.view().as_i64()
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

    /// Heap bytes [`Str::grow_to`] adds for the string to hold `len`
    /// bytes: known before the write, so the write can reserve them.
    pub fn growth_to(&self, len: usize) -> usize {
        allocated(self.capacity_for(len)).saturating_sub(self.heap_bytes())
    }

    /// The string as a growable buffer with room for `len` bytes, allocated
    /// as [`Str::growth_to`] says.
    pub fn grow_to(&mut self, len: usize) -> &mut Vec<u8> {
        let capacity = self.capacity_for(len);
        let bytes = self.make_growable();
        bytes.reserve_exact(capacity - bytes.len());
        bytes
    }

    /// The capacity a growable string takes to hold `len` bytes: what it
    /// has if that is enough, else Redis's greedy growth
    /// (`sdsMakeRoomFor`): double under [`MAX_PREALLOC`], then that much
    /// more, so repeated appends are amortised and the spare room of a big
    /// string stays bounded.
    fn capacity_for(&self, len: usize) -> usize {
        match self {
            Str::Growable(v) if v.capacity() >= len => v.capacity(),
            _ => {
                let len = len.max(self.len());
                len.saturating_add(len.min(MAX_PREALLOC))
            }
        }
    }

    /// Heap bytes owned by this string.
    pub fn heap_bytes(&self) -> usize {
        self.view().heap_bytes()
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(&self) -> &'static str {
        self.view().encoding()
    }
}

/// A string as a stored key holds it, borrowed: keys keep short strings
/// inside their own allocation (see `entry.rs`), so readers get a view
/// rather than a `&Str`. The variants mirror [`Str`]'s encodings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StrRef<'a> {
    /// An integer-encoded string.
    Int(i64),
    /// Bytes written once.
    Fixed(&'a [u8]),
    /// Bytes grown in place, with their spare capacity.
    Growable(&'a Vec<u8>),
}

impl<'a> StrRef<'a> {
    /// The string's length in bytes, without materialising it.
    pub fn len(self) -> usize {
        match self {
            StrRef::Int(n) => decimal_len(n),
            StrRef::Fixed(b) => b.len(),
            StrRef::Growable(v) => v.len(),
        }
    }

    /// True for the empty string.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The bytes of the string; integers are formatted on the fly.
    pub fn to_bytes(self) -> Cow<'a, [u8]> {
        match self {
            StrRef::Int(n) => Cow::Owned(n.to_string().into_bytes()),
            StrRef::Fixed(b) => Cow::Borrowed(b),
            StrRef::Growable(v) => Cow::Borrowed(v),
        }
    }

    /// The integer value if the string is one, as INCR needs it.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            StrRef::Int(n) => Some(n),
            StrRef::Fixed(b) => parse_canonical_i64(b),
            StrRef::Growable(v) => parse_canonical_i64(v),
        }
    }

    /// Heap bytes the owned form of this string holds.
    pub fn heap_bytes(self) -> usize {
        match self {
            StrRef::Int(_) => 0,
            StrRef::Fixed(b) => allocated(b.len()),
            StrRef::Growable(v) => allocated(v.capacity()),
        }
    }

    /// Redis's OBJECT ENCODING name.
    pub fn encoding(self) -> &'static str {
        match self {
            StrRef::Int(_) => "int",
            // A short HyperLogLog stays inline here, but Redis reports it
            // raw: the PF commands unshare (and so un-embed) what they touch.
            StrRef::Fixed(b)
                if b.len() <= EMBSTR_MAX_LEN && crate::hll::encoding_of(b).is_err() =>
            {
                "embstr"
            }
            _ => "raw",
        }
    }

    /// An owned copy in the same encoding.
    pub fn to_str(self) -> Str {
        match self {
            StrRef::Int(n) => Str::Int(n),
            StrRef::Fixed(b) => Str::Fixed(b.into()),
            StrRef::Growable(v) => Str::Growable(v.clone()),
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
    Stream, Stream, as_stream, as_stream_mut;
}

/// A stored value, borrowed: what a key's entry hands readers, since a
/// short string lives inside the entry itself rather than in a [`Value`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// A string.
    Str(StrRef<'a>),
    /// A hash.
    Hash(&'a Hash),
    /// A set.
    Set(&'a Set),
    /// A list.
    List(&'a List),
    /// A sorted set.
    ZSet(&'a ZSet),
    /// A stream.
    Stream(&'a Stream),
}

/// Typed reads of a borrowed value: `None` for a value of another type,
/// and the caller replies WRONGTYPE.
macro_rules! typed_view {
    ($($variant:ident, $ty:ty, $get:ident;)*) => {
        impl<'a> ValueRef<'a> {
            $(
                #[doc = concat!("The ", stringify!($variant), " inside, or `None` for another type.")]
                pub fn $get(self) -> Option<$ty> {
                    match self {
                        ValueRef::$variant(v) => Some(v),
                        _ => None,
                    }
                }
            )*
        }
    };
}

typed_view! {
    Str, StrRef<'a>, as_str;
    Hash, &'a Hash, as_hash;
    Set, &'a Set, as_set;
    List, &'a List, as_list;
    ZSet, &'a ZSet, as_zset;
    Stream, &'a Stream, as_stream;
}

impl<'a> ValueRef<'a> {
    /// Loads ahead what finding `member` in this value will read, when it
    /// is a hash, set or sorted set in a hash table (a small one is one
    /// buffer, which looking the key up brought in).
    pub fn prefetch_member(self, member: &[u8]) {
        match self {
            ValueRef::Hash(hash) => hash.prefetch_field(member),
            ValueRef::Set(set) => set.prefetch_member(member),
            ValueRef::ZSet(zset) => zset.prefetch_member(member),
            ValueRef::Str(_) | ValueRef::List(_) | ValueRef::Stream(_) => {}
        }
    }

    /// The name TYPE replies with.
    pub fn type_name(self) -> &'static str {
        match self {
            ValueRef::Str(_) => "string",
            ValueRef::Hash(_) => "hash",
            ValueRef::Set(_) => "set",
            ValueRef::List(_) => "list",
            ValueRef::ZSet(_) => "zset",
            ValueRef::Stream(_) => "stream",
        }
    }

    /// The name OBJECT ENCODING replies with.
    pub fn encoding(self) -> &'static str {
        match self {
            ValueRef::Str(s) => s.encoding(),
            ValueRef::Hash(h) => h.encoding(),
            ValueRef::Set(s) => s.encoding(),
            ValueRef::List(l) => l.encoding(),
            ValueRef::ZSet(z) => z.encoding(),
            ValueRef::Stream(_) => "stream",
        }
    }

    /// Heap bytes the owned form of this value holds, for memory
    /// accounting. O(1): every collection keeps its size as it changes.
    pub fn heap_bytes(self) -> usize {
        match self {
            ValueRef::Str(s) => s.heap_bytes(),
            ValueRef::Hash(h) => h.heap_bytes(),
            ValueRef::Set(s) => allocated(std::mem::size_of::<Set>()) + s.heap_bytes(),
            ValueRef::List(l) => l.heap_bytes(),
            ValueRef::ZSet(z) => allocated(std::mem::size_of::<ZSet>()) + z.heap_bytes(),
            ValueRef::Stream(s) => allocated(std::mem::size_of::<Stream>()) + s.heap_bytes(),
        }
    }

    /// Allocations freeing the value walks, where its heap bytes understate
    /// them: a stream packs many small entries per node, so a stream of
    /// thousands of nodes may own less heap than the lazyfree threshold.
    /// Other types count 0 (their heap grows with their elements).
    pub fn free_effort(self) -> usize {
        match self {
            ValueRef::Stream(s) => s.allocations(),
            _ => 0,
        }
    }

    /// True for a collection with no element left: such a key is deleted,
    /// as Redis never keeps an empty collection.
    pub fn is_empty_collection(self) -> bool {
        match self {
            ValueRef::Str(_) => false,
            ValueRef::Hash(h) => h.is_empty(),
            ValueRef::Set(s) => s.is_empty(),
            ValueRef::List(l) => l.is_empty(),
            ValueRef::ZSet(z) => z.is_empty(),
            // An empty stream is kept: its last ID and groups are state.
            ValueRef::Stream(_) => false,
        }
    }

    /// An owned deep copy (COPY).
    pub fn to_value(self) -> Value {
        match self {
            ValueRef::Str(s) => Value::Str(s.to_str()),
            ValueRef::Hash(h) => Value::Hash(h.clone()),
            ValueRef::Set(s) => Value::Set(Box::new(s.clone())),
            ValueRef::List(l) => Value::List(l.clone()),
            ValueRef::ZSet(z) => Value::ZSet(Box::new(z.clone())),
            ValueRef::Stream(s) => Value::Stream(Box::new(s.clone())),
        }
    }
}

impl Value {
    /// Moves what this value owns directly where `mover` allocates, block
    /// by block, where it asks to (see `crate::defrag`): a string's bytes,
    /// a set's or sorted set's box, and a small collection's one buffer. A
    /// large collection's inner structures stay. True if anything moved.
    pub(crate) fn relocate(&mut self, mover: &mut dyn Relocate) -> bool {
        match self {
            Value::Str(Str::Int(_)) | Value::Stream(_) => false,
            Value::Str(Str::Fixed(bytes)) => relocate_slice(bytes, mover),
            Value::Str(Str::Growable(bytes)) => relocate_vec(bytes, mover),
            Value::Hash(Hash::Pack(pack)) | Value::List(List::Pack(pack)) => pack.relocate(mover),
            Value::Hash(Hash::Table(_)) | Value::List(List::Chunked(_)) => false,
            Value::Set(set) => {
                let boxed = relocate_box(set, mover);
                boxed
                    | match &mut **set {
                        Set::Ints(ints) => ints.relocate(mover),
                        Set::Pack(pack) => pack.relocate(mover),
                        Set::Table(_) => false,
                    }
            }
            Value::ZSet(zset) => {
                let boxed = relocate_box(zset, mover);
                boxed
                    | match &mut **zset {
                        ZSet::Pack(pack) => pack.relocate(mover),
                        ZSet::Tree(_) => false,
                    }
            }
        }
    }

    /// A borrowed view of this value, which carries every read.
    pub fn view(&self) -> ValueRef<'_> {
        match self {
            Value::Str(s) => ValueRef::Str(s.view()),
            Value::Hash(h) => ValueRef::Hash(h),
            Value::Set(s) => ValueRef::Set(s),
            Value::List(l) => ValueRef::List(l),
            Value::ZSet(z) => ValueRef::ZSet(z),
            Value::Stream(s) => ValueRef::Stream(s),
        }
    }

    /// The name TYPE replies with.
    pub fn type_name(&self) -> &'static str {
        self.view().type_name()
    }

    /// The name OBJECT ENCODING replies with.
    pub fn encoding(&self) -> &'static str {
        self.view().encoding()
    }

    /// Heap bytes owned by this value, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.view().heap_bytes()
    }

    /// True for a collection with no element left.
    pub fn is_empty_collection(&self) -> bool {
        self.view().is_empty_collection()
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
    // Summed as a negative number, which reaches i64::MIN; the digits are
    // checked already, so no UTF-8 check and no `str::parse` (every SET
    // value and every INCR comes through here).
    let mut negated: i64 = 0;
    for &digit in digits {
        negated = negated
            .checked_mul(10)?
            .checked_sub(i64::from(digit - b'0'))?;
    }
    match bytes[0] == b'-' {
        true => Some(negated),
        false => negated.checked_neg(),
    }
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
        assert_eq!(parse_canonical_i64(b"9223372036854775807"), Some(i64::MAX));
        for n in (-2_000..2_000).chain([i64::MIN + 1, i64::MAX - 1, 1 << 53]) {
            assert_eq!(parse_canonical_i64(n.to_string().as_bytes()), Some(n));
        }
        for bad in [
            &b"9223372036854775808"[..],
            b"-9223372036854775809",
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

    #[test]
    fn growth_is_known_before_the_string_grows() {
        let mut s = Str::from_bytes(b"hello");
        for len in [6, 100, 5000, 3 << 20, (3 << 20) + 10, 9 << 20] {
            let (before, growth) = (s.heap_bytes(), s.growth_to(len));
            s.grow_to(len).resize(len, 0);
            assert_eq!(s.heap_bytes(), before + growth, "growing to {len}");
        }
        assert_eq!(s.growth_to(9 << 20), 0, "room was left");
        let spare = s.heap_bytes() - (9 << 20);
        assert!(
            spare <= MAX_PREALLOC * 5 / 4,
            "past 1 MB, at most 1 MB spare: {spare}"
        );
    }
}

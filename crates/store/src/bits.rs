//! Bit arithmetic on strings, as Redis's bitops.c does it: the bitmap
//! commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD) keep no
//! structure of their own, a bitmap is a plain string and bit 0 is the most
//! significant bit of byte 0.
//!
//! Ranges. BITCOUNT and BITPOS take `start end` in bytes or in bits, with
//! negative indexes counted from the end and out-of-range ends clamped
//! (`Range::resolve`). Both then work on an inclusive range of bit
//! positions: a count over it is a popcount of its whole bytes plus the
//! parts of the two edge bytes inside it; a search masks the edge bytes and
//! scans the rest a word at a time. Counting and skipping 8 bytes at once
//! is what Redis's own loops do by hand; the edges are handled byte by
//! byte, which keeps the code short at the cost of nothing measurable (two
//! bytes per call).
//!
//! Bit fields. BITFIELD reads and writes integers of 1 to 64 bits (unsigned
//! up to 63, so every value fits an i64) at any bit offset, big-endian,
//! bit by bit. A read past the end of the string sees zeros, so GET never
//! grows it; a write needs the string grown first (the caller reserves the
//! memory). An increment or a set that does not fit the field overflows as
//! the caller asks: WRAP (two's complement modulo 2^bits), SAT (clamp to the
//! field's min or max) or FAIL (no write). The overflow test reproduces
//! Redis's checkSignedBitfieldOverflow and checkUnsignedBitfieldOverflow
//! operation for operation (with wrapping arithmetic where C wraps), including
//! their quirks: a SET of -1 into an unsigned field counts as an overflow
//! upwards (the value is read as unsigned first), so SAT stores the maximum;
//! a SET into a signed field of a value less than 2^(bits-1) above i64::MIN
//! also overflows upwards (Redis's `max - value` wraps), so SAT stores the
//! maximum there too. Matching them
//! exactly matters more than tidying them: replies must be Redis's.
//!
//! BITOP combines strings of different lengths as if the shorter ones were
//! padded with zero bytes; the result is as long as the longest input.

/// How BITCOUNT and BITPOS read `start` and `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Byte indexes (the default).
    Byte,
    /// Bit indexes (Redis 7's BIT option).
    Bit,
}

/// An inclusive, non-empty range of bit positions within a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// First bit in the range.
    pub first: u64,
    /// Last bit in the range.
    pub last: u64,
}

impl Range {
    /// Every bit of a string of `len` bytes; `None` when it is empty.
    pub fn whole(len: usize) -> Option<Range> {
        Range::resolve(0, -1, len, Unit::Byte)
    }

    /// The range `start..=end` designates in a string of `len` bytes, as
    /// BITCOUNT and BITPOS compute it: negative indexes count from the end,
    /// then both are clamped into the string; `None` when nothing is left.
    pub fn resolve(start: i64, end: i64, len: usize, unit: Unit) -> Option<Range> {
        let total = match unit {
            Unit::Byte => len as i64,
            Unit::Bit => (len as i64) << 3,
        };
        let from_end = |i: i64| if i < 0 { total + i } else { i };
        let start = from_end(start).max(0);
        let end = from_end(end).max(0).min(total - 1);
        if start > end {
            return None;
        }
        let (start, end) = (start as u64, end as u64);
        Some(match unit {
            Unit::Byte => Range {
                first: start << 3,
                last: (end << 3) + 7,
            },
            Unit::Bit => Range {
                first: start,
                last: end,
            },
        })
    }

    /// The first and last byte the range touches.
    fn bytes(self) -> (usize, usize) {
        ((self.first >> 3) as usize, (self.last >> 3) as usize)
    }

    /// The bits of byte `index` inside the range, as a mask.
    fn mask_of(self, index: usize) -> u8 {
        let (first, last) = self.bytes();
        let mut mask = 0xffu8;
        if index == first {
            mask &= 0xff >> (self.first & 7);
        }
        if index == last {
            mask &= 0xff << (7 - (self.last & 7));
        }
        mask
    }
}

/// The bit at `offset` (0 past the end of `bytes`).
pub fn get_bit(bytes: &[u8], offset: u64) -> bool {
    let byte = usize::try_from(offset >> 3).ok().and_then(|i| bytes.get(i));
    byte.is_some_and(|b| b & (0x80 >> (offset & 7)) != 0)
}

/// Sets the bit at `offset`, which `bytes` must hold, to `on`; returns the
/// bit it replaced.
pub fn set_bit(bytes: &mut [u8], offset: u64, on: bool) -> bool {
    let byte = &mut bytes[(offset >> 3) as usize];
    let mask = 0x80 >> (offset & 7);
    let old = *byte & mask != 0;
    if on {
        *byte |= mask;
    } else {
        *byte &= !mask;
    }
    old
}

/// The number of set bits in `range`, which must lie within `bytes`.
pub fn count_ones(bytes: &[u8], range: Range) -> u64 {
    let (first, last) = range.bytes();
    let edges = |i: usize| (bytes[i] & range.mask_of(i)).count_ones() as u64;
    if first == last {
        return edges(first);
    }
    edges(first) + popcount(&bytes[first + 1..last]) + edges(last)
}

/// The number of set bits in `bytes`, a word at a time.
fn popcount(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let whole: u64 = words
        .by_ref()
        .map(|w| u64::from_ne_bytes(w.try_into().expect("chunks of 8")).count_ones() as u64)
        .sum();
    let rest: u64 = words
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum();
    whole + rest
}

/// The position of the first bit equal to `bit` in `range`, which must lie
/// within `bytes`; `None` if there is none.
pub fn first_bit(bytes: &[u8], bit: bool, range: Range) -> Option<u64> {
    let (first, last) = range.bytes();
    // Searching for a clear bit is searching for a set bit in the inverse.
    let byte_at = |i: usize| {
        let b = if bit { bytes[i] } else { !bytes[i] };
        b & range.mask_of(i)
    };
    let found = |i: usize, b: u8| Some(((i as u64) << 3) + b.leading_zeros() as u64);
    let head = byte_at(first);
    if head != 0 {
        return found(first, head);
    }
    if first == last {
        return None;
    }
    let skip = if bit { 0x00 } else { 0xff };
    let mut i = first + 1;
    for word in bytes[i..last].chunks_exact(8) {
        if word.iter().any(|&b| b != skip) {
            break;
        }
        i += 8;
    }
    for (j, &b) in bytes[i..last].iter().enumerate() {
        if b != skip {
            return found(i + j, if bit { b } else { !b });
        }
    }
    let tail = byte_at(last);
    (tail != 0).then(|| found(last, tail)).flatten()
}

/// A BITOP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    /// Bitwise AND.
    And,
    /// Bitwise OR.
    Or,
    /// Bitwise XOR.
    Xor,
    /// Bitwise NOT of the single input.
    Not,
}

/// Combines `inputs` with `op`, shorter inputs read as if padded with zero
/// bytes: the result is as long as the longest input (empty for none).
/// NOT reads the first input only.
pub fn bitop(op: BitOp, inputs: &[&[u8]]) -> Vec<u8> {
    let len = inputs.iter().map(|s| s.len()).max().unwrap_or(0);
    let Some((first, rest)) = inputs.split_first() else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(first);
    out.resize(len, 0);
    for input in rest {
        match op {
            BitOp::And => combine(&mut out, input, |a, b| a & b),
            BitOp::Or => combine(&mut out, input, |a, b| a | b),
            BitOp::Xor => combine(&mut out, input, |a, b| a ^ b),
            BitOp::Not => break,
        }
    }
    if op == BitOp::Not {
        out.iter_mut().for_each(|b| *b = !*b);
    }
    out
}

/// `out[i] = f(out[i], input[i])` for every byte of `out`, `input` padded
/// with zero bytes.
fn combine(out: &mut [u8], input: &[u8], f: impl Fn(u8, u8) -> u8) {
    let padding = std::iter::repeat_n(0, out.len().saturating_sub(input.len()));
    for (b, x) in out.iter_mut().zip(input.iter().copied().chain(padding)) {
        *b = f(*b, x);
    }
}

/// What BITFIELD does when a value does not fit its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Keep the low bits (two's complement modulo 2^bits).
    Wrap,
    /// Clamp to the field's minimum or maximum.
    Sat,
    /// Write nothing.
    Fail,
}

/// A BITFIELD integer type: `i1`..`i64` or `u1`..`u63`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    signed: bool,
    bits: u32,
}

impl Field {
    /// A signed or unsigned field of `bits` bits, if BITFIELD supports it.
    pub fn new(signed: bool, bits: i64) -> Option<Field> {
        let widest = if signed { 64 } else { 63 };
        (1..=widest).contains(&bits).then_some(Field {
            signed,
            bits: bits as u32,
        })
    }

    /// The field's width in bits.
    pub fn bits(self) -> u32 {
        self.bits
    }

    /// The field's value at bit `offset` of `bytes`, bits past the end
    /// read as zeros.
    pub fn get(self, bytes: &[u8], offset: u64) -> i64 {
        let raw = (0..self.bits as u64).fold(0u64, |acc, i| {
            (acc << 1) | get_bit(bytes, offset.saturating_add(i)) as u64
        });
        if self.signed && self.bits < 64 && raw & (1 << (self.bits - 1)) != 0 {
            (raw | (u64::MAX << self.bits)) as i64
        } else {
            raw as i64
        }
    }

    /// Writes the low `bits` bits of `value` at bit `offset` of `bytes`,
    /// which must hold them.
    pub fn set(self, bytes: &mut [u8], offset: u64, value: i64) {
        for i in 0..self.bits as u64 {
            let on = (value as u64 >> (self.bits as u64 - 1 - i)) & 1 != 0;
            set_bit(bytes, offset + i, on);
        }
    }

    /// `value + incr` as the field stores it under `overflow`; `None` when
    /// it does not fit and `overflow` is FAIL. A SET is `fit(value, 0)`.
    /// For an unsigned field `value` is read as a u64, as Redis casts it.
    pub fn fit(self, value: i64, incr: i64, overflow: Overflow) -> Option<i64> {
        let out_of_range = if self.signed {
            self.signed_overflow(value, incr)
        } else {
            self.unsigned_overflow(value as u64, incr)
        };
        let Some(upwards) = out_of_range else {
            return Some(value.wrapping_add(incr));
        };
        match overflow {
            Overflow::Fail => None,
            Overflow::Wrap => Some(self.wrap(value.wrapping_add(incr))),
            Overflow::Sat => Some(match (upwards, self.signed) {
                (true, _) => self.max(),
                (false, true) => -self.max() - 1,
                (false, false) => 0,
            }),
        }
    }

    /// The largest value the field holds.
    fn max(self) -> i64 {
        match (self.signed, self.bits) {
            (true, 64) => i64::MAX,
            (true, bits) => (1i64 << (bits - 1)) - 1,
            (false, bits) => ((1u64 << bits) - 1) as i64,
        }
    }

    /// `n` reduced to the field, two's complement: sign-extended from the
    /// field's top bit when signed, masked when unsigned.
    fn wrap(self, n: i64) -> i64 {
        if self.bits == 64 {
            return n;
        }
        let high = u64::MAX << self.bits;
        let top = 1u64 << (self.bits - 1);
        let n = n as u64;
        (if self.signed && n & top != 0 {
            n | high
        } else {
            n & !high
        }) as i64
    }

    /// Redis's checkSignedBitfieldOverflow: `Some(true)` when `value +
    /// incr` passes the maximum, `Some(false)` the minimum.
    fn signed_overflow(self, value: i64, incr: i64) -> Option<bool> {
        let (max, narrow) = (self.max(), self.bits != 64);
        let min = -max - 1;
        let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
        let min_incr = min.wrapping_sub(value);
        if value > max || (narrow && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr)
        {
            Some(true)
        } else if value < min
            || (narrow && incr < min_incr)
            || (value < 0 && incr < 0 && incr < min_incr)
        {
            Some(false)
        } else {
            None
        }
    }

    /// Redis's checkUnsignedBitfieldOverflow, for fields of at most 63 bits.
    fn unsigned_overflow(self, value: u64, incr: i64) -> Option<bool> {
        let max = self.max() as u64;
        let max_incr = max.wrapping_sub(value) as i64;
        let min_incr = value.wrapping_neg() as i64;
        if value > max || (incr > 0 && incr > max_incr) {
            Some(true)
        } else if incr < 0 && incr < min_incr {
            Some(false)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn field(signed: bool, bits: i64) -> Field {
        Field::new(signed, bits).expect("a valid field")
    }

    /// Bit by bit, the obvious way: what the fast paths must agree with.
    fn bits_of(bytes: &[u8]) -> Vec<bool> {
        (0..bytes.len() as u64 * 8)
            .map(|i| get_bit(bytes, i))
            .collect()
    }

    #[test]
    fn ranges_resolve_as_redis_clamps_them() {
        let r = |first, last| Some(Range { first, last });
        assert_eq!(Range::resolve(0, -1, 3, Unit::Byte), r(0, 23));
        assert_eq!(Range::resolve(1, 1, 3, Unit::Byte), r(8, 15));
        assert_eq!(Range::resolve(-100, 100, 3, Unit::Byte), r(0, 23));
        assert_eq!(Range::resolve(5, 10, 3, Unit::Bit), r(5, 10));
        assert_eq!(Range::resolve(-3, -1, 2, Unit::Bit), r(13, 15));
        assert_eq!(Range::resolve(2, 1, 3, Unit::Byte), None);
        assert_eq!(Range::resolve(3, 5, 3, Unit::Byte), None);
        assert_eq!(Range::resolve(0, -1, 0, Unit::Byte), None);
        assert_eq!(Range::whole(1), r(0, 7));
    }

    #[test]
    fn counts_and_searches_at_the_edges() {
        let s = b"\x0f\xff\x00\xf0";
        assert_eq!(count_ones(s, Range::whole(4).unwrap()), 16);
        assert_eq!(count_ones(s, Range { first: 2, last: 5 }), 2);
        assert_eq!(count_ones(s, Range { first: 6, last: 25 }), 12);
        assert_eq!(first_bit(s, true, Range::whole(4).unwrap()), Some(4));
        assert_eq!(first_bit(s, false, Range { first: 8, last: 31 }), Some(16));
        assert_eq!(
            first_bit(
                s,
                true,
                Range {
                    first: 16,
                    last: 23
                }
            ),
            None
        );
        assert_eq!(
            first_bit(b"\xff\xff", false, Range::whole(2).unwrap()),
            None
        );
    }

    #[test]
    fn single_bits() {
        let mut s = vec![0u8; 2];
        assert!(!set_bit(&mut s, 9, true));
        assert!(set_bit(&mut s, 9, true));
        assert_eq!(s, [0x00, 0x40]);
        assert!(get_bit(&s, 9));
        assert!(!get_bit(&s, 1 << 40));
    }

    #[test]
    fn bitop_pads_shorter_inputs_with_zeros() {
        let (a, b): (&[u8], &[u8]) = (b"\xff\x0f", b"\x0f");
        assert_eq!(bitop(BitOp::And, &[a, b]), [0x0f, 0x00]);
        assert_eq!(bitop(BitOp::Or, &[b, a]), [0xff, 0x0f]);
        assert_eq!(bitop(BitOp::Xor, &[a, b]), [0xf0, 0x0f]);
        assert_eq!(bitop(BitOp::Not, &[b]), [0xf0]);
        assert_eq!(bitop(BitOp::And, &[b"", b""]), Vec::<u8>::new());
    }

    #[test]
    fn fields_read_and_write_big_endian() {
        let mut s = vec![0u8; 3];
        field(false, 8).set(&mut s, 4, 0xab);
        assert_eq!(s, [0x0a, 0xb0, 0x00]);
        assert_eq!(field(false, 8).get(&s, 4), 0xab);
        assert_eq!(field(true, 8).get(&s, 4), -85);
        assert_eq!(field(true, 4).get(&s, 4), -6);
        assert_eq!(field(false, 63).get(&s, 20), 0, "past the end reads zeros");
        let mut word = [0u8; 8];
        field(true, 64).set(&mut word, 0, i64::MIN);
        assert_eq!(word, [0x80, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn overflow_follows_redis() {
        use Overflow::*;
        let (u8f, i8f) = (field(false, 8), field(true, 8));
        assert_eq!(u8f.fit(250, 10, Wrap), Some(4));
        assert_eq!(u8f.fit(250, 10, Sat), Some(255));
        assert_eq!(u8f.fit(250, 10, Fail), None);
        assert_eq!(u8f.fit(5, -10, Sat), Some(0));
        assert_eq!(u8f.fit(5, -10, Wrap), Some(251));
        assert_eq!(u8f.fit(-1, 0, Sat), Some(255), "SET -1 reads as u64::MAX");
        assert_eq!(i8f.fit(100, 100, Wrap), Some(-56));
        assert_eq!(i8f.fit(-100, -100, Sat), Some(-128));
        assert_eq!(i8f.fit(200, 0, Wrap), Some(-56));
        assert_eq!(
            i8f.fit(i64::MIN, 0, Sat),
            Some(127),
            "Redis's wrapped max_incr"
        );
        assert_eq!(i8f.fit(i64::MIN + 128, 0, Sat), Some(-128));
        let i64f = field(true, 64);
        assert_eq!(i64f.fit(i64::MAX, 1, Wrap), Some(i64::MIN));
        assert_eq!(i64f.fit(i64::MAX, 1, Sat), Some(i64::MAX));
        assert_eq!(i64f.fit(-5, i64::MAX, Sat), Some(i64::MAX - 5));
        assert_eq!(i64f.fit(i64::MIN, -1, Sat), Some(i64::MIN));
        let u63f = field(false, 63);
        assert_eq!(u63f.fit(i64::MAX, 1, Wrap), Some(0));
        assert_eq!(u63f.fit(0, i64::MIN, Wrap), Some(0));
        assert_eq!(field(true, 1).fit(1, 0, Sat), Some(0));
        assert_eq!(Field::new(false, 64), None);
        assert_eq!(Field::new(true, 65), None);
        assert_eq!(Field::new(true, 0), None);
    }

    fn bytes_and_range() -> impl Strategy<Value = (Vec<u8>, Range)> {
        proptest::collection::vec(any::<u8>(), 1..64).prop_flat_map(|bytes| {
            let bits = bytes.len() as u64 * 8;
            (Just(bytes), 0..bits, 0..bits).prop_map(|(bytes, a, b)| {
                let range = Range {
                    first: a.min(b),
                    last: a.max(b),
                };
                (bytes, range)
            })
        })
    }

    proptest! {
        #[test]
        fn count_and_search_agree_with_bit_by_bit((bytes, range) in bytes_and_range()) {
            let bits = bits_of(&bytes);
            let inside = &bits[range.first as usize..=range.last as usize];
            let ones = inside.iter().filter(|&&b| b).count() as u64;
            prop_assert_eq!(count_ones(&bytes, range), ones);
            for bit in [false, true] {
                let expected = inside.iter().position(|&b| b == bit).map(|i| range.first + i as u64);
                prop_assert_eq!(first_bit(&bytes, bit, range), expected);
            }
        }

        #[test]
        fn bitop_agrees_with_byte_by_byte(
            inputs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 1..5),
        ) {
            let views: Vec<&[u8]> = inputs.iter().map(|v| &v[..]).collect();
            let len = inputs.iter().map(Vec::len).max().unwrap_or(0);
            let byte = |v: &Vec<u8>, i: usize| v.get(i).copied().unwrap_or(0);
            for (op, f) in [
                (BitOp::And, (|a, b| a & b) as fn(u8, u8) -> u8),
                (BitOp::Or, |a, b| a | b),
                (BitOp::Xor, |a, b| a ^ b),
            ] {
                let expected: Vec<u8> = (0..len)
                    .map(|i| inputs[1..].iter().fold(byte(&inputs[0], i), |acc, v| f(acc, byte(v, i))))
                    .collect();
                prop_assert_eq!(bitop(op, &views), expected);
            }
            let not: Vec<u8> = (0..inputs[0].len()).map(|i| !inputs[0][i]).collect();
            prop_assert_eq!(bitop(BitOp::Not, &views[..1]), not);
        }

        #[test]
        fn a_field_reads_back_what_was_written(
            signed in any::<bool>(),
            bits in 1i64..=64,
            offset in 0u64..80,
            value in any::<i64>(),
        ) {
            prop_assume!(signed || bits < 64);
            let f = field(signed, bits);
            let mut bytes = vec![0u8; 20];
            f.set(&mut bytes, offset, value);
            prop_assert_eq!(f.get(&bytes, offset), f.wrap(value));
            let others: u64 = (0..160).filter(|&i| i < offset || i >= offset + bits as u64)
                .map(|i| get_bit(&bytes, i) as u64).sum();
            prop_assert_eq!(others, 0);
        }

        #[test]
        fn a_fitted_value_is_within_the_field(
            signed in any::<bool>(),
            bits in 1i64..=64,
            value in any::<i64>(),
            incr in any::<i64>(),
        ) {
            prop_assume!(signed || bits < 64);
            let f = field(signed, bits);
            let (max, min) = (f.max(), if signed { -f.max() - 1 } else { 0 });
            let start = f.wrap(value);
            for overflow in [Overflow::Wrap, Overflow::Sat, Overflow::Fail] {
                let exact = start as i128 + incr as i128;
                match f.fit(start, incr, overflow) {
                    Some(n) => {
                        prop_assert!(min <= n && n <= max);
                        if (min as i128..=max as i128).contains(&exact) {
                            prop_assert_eq!(n as i128, exact);
                        }
                    }
                    None => prop_assert!(!(min as i128..=max as i128).contains(&exact)),
                }
            }
        }
    }
}

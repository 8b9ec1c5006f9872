//! HyperLogLog: Redis 7.0's cardinality estimator, in Redis's own byte
//! representation, so an HLL is an ordinary string that GET, SET, DUMP and
//! RESTORE carry between keel and Redis unchanged.
//!
//! # Representation
//!
//! Every HLL starts with a 16-byte header:
//!
//! ```text
//! "HYLL" | encoding (0 dense, 1 sparse) | 3 unused bytes | cached cardinality
//! ```
//!
//! The cached cardinality is 8 bytes little endian; the top bit of its last
//! byte set means "stale". A write only sets that bit (the other bytes keep
//! the old estimate, as in Redis, which matters for byte equality), and
//! PFCOUNT of one key rewrites the 8 bytes when it recomputes.
//!
//! Each element is hashed with MurmurHash64A (seed `0xadc83b19`): the low
//! 14 bits pick one of 16,384 registers, and the position of the first set
//! bit in the remaining 50 (1 to 51) is the register's candidate value; a
//! register keeps the largest value it has seen.
//!
//! The *dense* encoding packs the registers 6 bits each, least significant
//! bits first, in 12,288 bytes: 12,304 bytes in all, whatever the count.
//! The *sparse* encoding run-length codes them with three opcodes:
//!
//! - ZERO `00xxxxxx`: 1 to 64 registers at zero;
//! - XZERO `01xxxxxx yyyyyyyy`: 1 to 16,384 registers at zero;
//! - VAL `1vvvvvxx`: 1 to 4 registers at value 1 to 32.
//!
//! A new HLL is sparse: the header and one XZERO, 18 bytes. Setting a
//! register splits the opcode covering it (at most XZERO-VAL-XZERO, three
//! bytes more) and merges equal neighbouring VALs. The HLL turns dense for
//! good when a register needs a value above 32 or the sparse form would
//! pass `hll-sparse-max-bytes` (3,000 by default): past that the dense form
//! is both smaller to reason about and O(1) to update, while sparse updates
//! are O(length) (the opcodes are scanned and shifted).
//!
//! # Estimator
//!
//! The count is Otmar Ertl's improved raw estimator ("New cardinality
//! estimation algorithms for HyperLogLog sketches", 2017), as Redis 7 uses
//! it: from the histogram of register values, `m·τ(1 − C[q+1]/m)`, halved
//! and summed down the histogram, plus `m·σ(C[0]/m)`, and
//! `α∞·m²/z`, rounded. It needs no bias tables and no switch to linear
//! counting at small cardinalities. Every floating-point step is done in
//! Redis's order so the results agree to the unit.
//!
//! # Trust
//!
//! The bytes are user data (SETRANGE can write anything), so nothing here
//! assumes a well-formed body: a sparse body whose runs do not add up to
//! exactly 16,384 registers is [`Corrupt`], opcodes past the last register
//! are never written, and a byte read past the end (an XZERO cut in half)
//! reads as zero. Redis reads the byte after its string there: the NUL,
//! unless an update of that same corrupt value wrote past its end, a
//! leftover keel does not keep (the only case where the two differ). The
//! header checks ([`encoding_of`]) are Redis's: the magic, a known
//! encoding, and a dense HLL's exact length. Where Redis would leave a
//! half-applied update behind on a corrupt body, keel's callers apply
//! nothing: they work on a copy and store it only on success.

use crate::value::Str;

/// Registers: 2^14.
pub const REGISTERS: usize = 1 << P;
/// Bits of the hash that pick the register.
const P: u32 = 14;
/// Bits of the hash left for the run of zeroes.
const Q: usize = 64 - P as usize;
/// Bits per dense register.
const BITS: usize = 6;
/// The largest value a dense register holds.
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Bytes of the header.
pub const HEADER_LEN: usize = 16;
/// Bytes of a dense HLL.
pub const DENSE_LEN: usize = HEADER_LEN + REGISTERS * BITS / 8;
/// Redis's seed for MurmurHash64A.
const SEED: u64 = 0xadc8_3b19;
/// Where the encoding byte is.
const ENCODING_AT: usize = 4;
/// Where the cached cardinality is.
const CARDINALITY_AT: usize = 8;
/// The stale bit, in the cardinality's last byte.
const STALE: u8 = 0x80;
/// Encoding byte values.
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// The largest value and run a VAL opcode holds.
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
/// The longest run a ZERO opcode holds (an XZERO holds all registers).
const ZERO_MAX_LEN: usize = 64;
/// α∞ = 1 / (2 ln 2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The two encodings of an HLL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// 16,384 registers of 6 bits.
    Dense,
    /// Run-length coded registers.
    Sparse,
}

impl Encoding {
    /// The name PFDEBUG ENCODING replies with.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// A string that is not an HLL: Redis's WRONGTYPE "Key is not a valid
/// HyperLogLog string value".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotHll;

/// An HLL whose header is right but whose sparse body does not describe
/// exactly 16,384 registers: Redis's INVALIDOBJ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// The encoding of `bytes` if they pass Redis's checks for an HLL string
/// (`isHLLObjectOrReply`): the header, a known encoding, and for a dense
/// HLL its exact length. The body is checked when it is read.
pub fn encoding_of(bytes: &[u8]) -> Result<Encoding, NotHll> {
    if bytes.len() < HEADER_LEN || &bytes[..4] != b"HYLL" {
        return Err(NotHll);
    }
    match bytes[ENCODING_AT] {
        DENSE if bytes.len() == DENSE_LEN => Ok(Encoding::Dense),
        SPARSE => Ok(Encoding::Sparse),
        _ => Err(NotHll),
    }
}

/// A new, empty HLL: sparse, one XZERO covering every register, a valid
/// cached cardinality of 0.
pub fn new() -> Vec<u8> {
    let mut hll = vec![0; HEADER_LEN];
    hll[..4].copy_from_slice(b"HYLL");
    hll[ENCODING_AT] = SPARSE;
    push_zero_run(&mut hll, REGISTERS);
    hll
}

/// How an HLL is stored: a sparse one (written whole on each change, a few
/// hundred bytes at most by default) as a string written once, which the
/// keyspace keeps inside the key's own allocation; a dense one as a
/// growable string, which stays in its own buffer and is updated in place.
pub fn into_str(mut hll: Vec<u8>) -> Str {
    match encoding_of(&hll) {
        Ok(Encoding::Dense) => {
            hll.shrink_to_fit();
            Str::Growable(hll)
        }
        _ => Str::Fixed(hll.into_boxed_slice()),
    }
}

/// The bytes of a stored string, writable in place (an integer-encoded
/// string has none, and is never an HLL).
pub fn bytes_mut(s: &mut Str) -> Option<&mut [u8]> {
    match s {
        Str::Int(_) => None,
        Str::Fixed(bytes) => Some(bytes),
        Str::Growable(bytes) => Some(bytes),
    }
}

/// The cached cardinality, unless it is stale.
pub fn cached_count(hll: &[u8]) -> Option<u64> {
    let card: [u8; 8] = hll.get(CARDINALITY_AT..HEADER_LEN)?.try_into().ok()?;
    (card[7] & STALE == 0).then(|| u64::from_le_bytes(card))
}

/// Stores `count` as the cached cardinality.
pub fn set_cached_count(hll: &mut [u8], count: u64) {
    hll[CARDINALITY_AT..HEADER_LEN].copy_from_slice(&count.to_le_bytes());
}

/// Marks the cached cardinality stale (only its top bit changes).
pub fn invalidate_cache(hll: &mut [u8]) {
    hll[HEADER_LEN - 1] |= STALE;
}

/// MurmurHash2, 64-bit version (`MurmurHash64A`), reading 8-byte blocks
/// little endian as Redis's endian-neutral variant does.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `element` falls in and its candidate value: one plus the
/// number of zeroes before the first set bit of the hash's upper 50 bits
/// (Redis's `hllPatLen`).
pub fn register_of(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let run = (hash >> P) | (1 << Q);
    (index, run.trailing_zeros() as u8 + 1)
}

/// Adds `element`: true if a register grew (the estimate may have changed).
/// A sparse HLL may turn dense, as [`set_register`] says.
pub fn add(hll: &mut Vec<u8>, element: &[u8], sparse_max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, count) = register_of(element);
    set_register(hll, index, count, sparse_max_bytes)
}

/// Raises register `index` to `count` if it is lower: true if it did. A
/// sparse HLL turns dense when `count` is above what a VAL opcode holds or
/// the sparse form would grow past `sparse_max_bytes`.
pub fn set_register(
    hll: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Result<bool, Corrupt> {
    match hll.get(ENCODING_AT) {
        Some(&DENSE) => Ok(dense_set(&mut hll[HEADER_LEN..], index, count)),
        Some(&SPARSE) => sparse_set(hll, index, count, sparse_max_bytes),
        _ => Err(Corrupt),
    }
}

/// Converts a sparse HLL to dense (Redis's `hllSparseToDense`): true if it
/// was sparse. The header, cached cardinality included, is kept.
pub fn to_dense(hll: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if hll.get(ENCODING_AT) != Some(&SPARSE) {
        return Ok(false);
    }
    let mut dense = vec![0; DENSE_LEN];
    dense[..HEADER_LEN].copy_from_slice(&hll[..HEADER_LEN]);
    dense[ENCODING_AT] = DENSE;
    for_each_run(&hll[HEADER_LEN..], |start, len, value| {
        for i in start..start + len {
            dense_set(&mut dense[HEADER_LEN..], i, value);
        }
    })?;
    *hll = dense;
    Ok(true)
}

/// The value of every register, one byte each (PFDEBUG GETREG, merges).
pub fn registers(hll: &[u8]) -> Result<Box<[u8; REGISTERS]>, Corrupt> {
    let mut max = Box::new([0; REGISTERS]);
    merge_into(&mut max, hll)?;
    Ok(max)
}

/// Raises each of `max` to the matching register of `hll` (Redis's
/// `hllMerge`); `hll` has passed [`encoding_of`].
pub fn merge_into(max: &mut [u8; REGISTERS], hll: &[u8]) -> Result<(), Corrupt> {
    match encoding_of(hll).map_err(|_| Corrupt)? {
        Encoding::Dense => {
            for (i, m) in max.iter_mut().enumerate() {
                *m = (*m).max(dense_get(&hll[HEADER_LEN..], i));
            }
            Ok(())
        }
        Encoding::Sparse => for_each_run(&hll[HEADER_LEN..], |start, len, value| {
            max[start..start + len]
                .iter_mut()
                .for_each(|m| *m = (*m).max(value));
        }),
    }
}

/// The estimated cardinality of `hll` (not using its cache).
pub fn count(hll: &[u8]) -> Result<u64, Corrupt> {
    let mut histogram = [0u32; 64];
    match encoding_of(hll).map_err(|_| Corrupt)? {
        Encoding::Dense => {
            for group in hll[HEADER_LEN..].chunks_exact(3) {
                // Four 6-bit registers in every three bytes.
                let (a, b, c) = (group[0], group[1], group[2]);
                histogram[(a & REGISTER_MAX) as usize] += 1;
                histogram[((a >> 6 | b << 2) & REGISTER_MAX) as usize] += 1;
                histogram[((b >> 4 | c << 4) & REGISTER_MAX) as usize] += 1;
                histogram[(c >> 2) as usize] += 1;
            }
        }
        Encoding::Sparse => for_each_run(&hll[HEADER_LEN..], |_, len, value| {
            histogram[value as usize] += len as u32;
        })?,
    }
    Ok(estimate(&histogram))
}

/// The estimated cardinality of registers held one byte each (the union
/// PFCOUNT of several keys computes).
pub fn count_registers(registers: &[u8; REGISTERS]) -> u64 {
    let mut histogram = [0u32; 64];
    for &r in registers.iter() {
        histogram[(r & REGISTER_MAX) as usize] += 1;
    }
    estimate(&histogram)
}

/// The opcodes of a sparse HLL as PFDEBUG DECODE lists them (`z:len`,
/// `Z:len`, `v:value,len`), or `None` for a dense one. Nothing is
/// validated: the opcodes are shown as they are.
pub fn decode_sparse(hll: &[u8]) -> Option<String> {
    if encoding_of(hll).ok()? != Encoding::Sparse {
        return None;
    }
    let body = &hll[HEADER_LEN..];
    let mut words = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let op = Op::at(body, at);
        words.push(match op {
            Op::Zero(len) => format!("z:{len}"),
            Op::XZero(len) => format!("Z:{len}"),
            Op::Val(value, len) => format!("v:{value},{len}"),
        });
        at += op.width();
    }
    Some(words.join(" "))
}

/// Estimates the cardinality from the histogram of register values, in
/// Redis's order of operations.
fn estimate(histogram: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histogram[Q + 1] as f64) / m);
    for &n in histogram[1..=Q].iter().rev() {
        z += n as f64;
        z *= 0.5;
    }
    z += m * sigma(histogram[0] as f64 / m);
    let estimate = (ALPHA_INF * m * m / z).round();
    if estimate.is_finite() {
        estimate as u64
    } else {
        // Every register at 52 or more (only a crafted dense HLL): z is 0,
        // and Redis's llroundl of infinity answers LLONG_MIN, read back as
        // this unsigned number.
        1 << 63
    }
}

/// σ(x) = x + Σ x^(2^k) 2^(k-1), summed until it stops changing.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if previous == z {
            return z;
        }
    }
}

/// τ(x) = (1 − x − Σ (1 − x^(2^-k))² 2^-k) / 3, summed until it stops
/// changing.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if previous == z {
            return z / 3.0;
        }
    }
}

/// Register `i` of dense `registers`. The last register's second byte is
/// past the end; it contributes no bits, and reads as zero.
fn dense_get(registers: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let shift = (i * BITS) & 7;
    let low = registers[byte] as u16 >> shift;
    let high = (*registers.get(byte + 1).unwrap_or(&0) as u16) << (8 - shift);
    (low | high) as u8 & REGISTER_MAX
}

/// Raises dense register `i` to `value` if lower: true if it did.
fn dense_set(registers: &mut [u8], i: usize, value: u8) -> bool {
    if value <= dense_get(registers, i) {
        return false;
    }
    let byte = i * BITS / 8;
    let shift = (i * BITS) & 7;
    let bits = (value as u16) << shift;
    let mask = (REGISTER_MAX as u16) << shift;
    registers[byte] = (registers[byte] & !(mask as u8)) | bits as u8;
    if let Some(next) = registers.get_mut(byte + 1) {
        *next = (*next & !((mask >> 8) as u8)) | (bits >> 8) as u8;
    }
    true
}

/// A sparse opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `len` registers at zero, one byte.
    Zero(usize),
    /// `len` registers at zero, two bytes.
    XZero(usize),
    /// `len` registers at `value`, one byte.
    Val(u8, usize),
}

impl Op {
    /// The opcode at `at` in `body`; a second XZERO byte past the end reads
    /// as zero.
    fn at(body: &[u8], at: usize) -> Op {
        let b = body[at];
        match b & 0xc0 {
            0x00 => Op::Zero((b & 0x3f) as usize + 1),
            0x40 => {
                let low = *body.get(at + 1).unwrap_or(&0) as usize;
                Op::XZero((((b & 0x3f) as usize) << 8 | low) + 1)
            }
            _ => Op::Val(((b >> 2) & 0x1f) + 1, (b & 0x3) as usize + 1),
        }
    }

    /// Registers covered.
    fn len(self) -> usize {
        match self {
            Op::Zero(len) | Op::XZero(len) | Op::Val(_, len) => len,
        }
    }

    /// Bytes taken.
    fn width(self) -> usize {
        match self {
            Op::XZero(_) => 2,
            _ => 1,
        }
    }
}

fn val_byte(value: u8, len: usize) -> u8 {
    0x80 | (value - 1) << 2 | (len - 1) as u8
}

/// Appends the opcode for a run of `len` (1..=16384) zero registers.
fn push_zero_run(out: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        out.extend_from_slice(&[0x40 | (l >> 8) as u8, l as u8]);
    } else {
        out.push((len - 1) as u8);
    }
}

/// Calls `f(first register, run length, value)` for each run of a sparse
/// body, checking first that the run stays within the registers; the body
/// is [`Corrupt`] unless its runs cover exactly all of them.
fn for_each_run(body: &[u8], mut f: impl FnMut(usize, usize, u8)) -> Result<(), Corrupt> {
    let (mut at, mut first) = (0, 0);
    while at < body.len() {
        let op = Op::at(body, at);
        let len = op.len();
        if first + len > REGISTERS {
            return Err(Corrupt);
        }
        f(first, len, if let Op::Val(v, _) = op { v } else { 0 });
        first += len;
        at += op.width();
    }
    if first == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Redis's `hllSparseSet`, byte for byte: find the opcode covering
/// `index`, split it around the new VAL, then merge equal VAL neighbours.
fn sparse_set(
    hll: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(hll, index, count);
    }
    // Step 1: the opcode covering `index`, the one before it, and the
    // first register it covers.
    let end = hll.len();
    let (mut at, mut first, mut prev) = (HEADER_LEN, 0, None);
    let op = loop {
        if at >= end {
            return Err(Corrupt);
        }
        let op = Op::at(hll, at);
        if index < first + op.len() {
            break op;
        }
        prev = Some(at);
        at += op.width();
        first += op.len();
    };
    let next = Some(at + op.width()).filter(|&n| n < end);
    // Step 2: the cases that change one byte in place.
    match op {
        Op::Val(value, _) if value >= count => return Ok(false),
        Op::Val(_, 1) | Op::Zero(1) => {
            hll[at] = val_byte(count, 1);
            merge_vals(hll, prev.unwrap_or(HEADER_LEN));
            return Ok(true);
        }
        _ => {}
    }
    // Step 3: the general case, splitting the opcode into up to three.
    let last = first + op.len() - 1;
    let mut seq = Vec::with_capacity(5);
    match op {
        Op::Val(value, _) => {
            if index != first {
                seq.push(val_byte(value, index - first));
            }
            seq.push(val_byte(count, 1));
            if index != last {
                seq.push(val_byte(value, last - index));
            }
        }
        _ => {
            if index != first {
                push_zero_run(&mut seq, index - first);
            }
            seq.push(val_byte(count, 1));
            if index != last {
                push_zero_run(&mut seq, last - index);
            }
        }
    }
    let delta = seq.len() as isize - op.width() as isize;
    if delta > 0 && end + delta as usize > sparse_max_bytes {
        return promote(hll, index, count);
    }
    let new_end = (end as isize + delta) as usize;
    // Room for the sequence even where an XZERO cut short at the end is
    // replaced: bytes past the new end are dropped below. Exactly that
    // room: a long (corrupt) sparse string is not doubled for three bytes.
    let room = new_end.max(end).max(at + seq.len());
    hll.reserve_exact(room - end);
    hll.resize(room, 0);
    if let Some(next) = next.filter(|_| delta != 0) {
        hll.copy_within(next..end, (next as isize + delta) as usize);
    }
    hll[at..at + seq.len()].copy_from_slice(&seq);
    hll.truncate(new_end);
    merge_vals(hll, prev.unwrap_or(HEADER_LEN));
    Ok(true)
}

/// Step 4 of `hllSparseSet`: from `at`, scans up to five opcodes and merges
/// adjacent VALs of equal value whose runs fit in one.
fn merge_vals(hll: &mut Vec<u8>, mut at: usize) {
    let mut scans = 5;
    while at < hll.len() && scans > 0 {
        scans -= 1;
        let op = Op::at(hll, at);
        let Op::Val(value, len) = op else {
            at += op.width();
            continue;
        };
        if let Some(Op::Val(next_value, next_len)) =
            (at + 1 < hll.len()).then(|| Op::at(hll, at + 1))
        {
            if next_value == value && len + next_len <= VAL_MAX_LEN {
                hll[at + 1] = val_byte(value, len + next_len);
                hll.remove(at);
                // Try the merged run with its right neighbour too.
                continue;
            }
        }
        at += 1;
    }
    invalidate_cache(hll);
}

/// Turns a sparse HLL dense and sets the register there.
fn promote(hll: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(hll)?;
    Ok(dense_set(&mut hll[HEADER_LEN..], index, count))
}

/// Redis's PFSELFTEST: checks that dense registers read back what was
/// written without disturbing their neighbours, then adds ten million
/// distinct elements to a dense and a sparse HLL at once, checking at each
/// power of ten that the sparse one stayed sparse while small, that both
/// estimate the same, and that the error is within six standard errors.
/// `random` supplies the test data. The error is Redis's TESTFAILED reply.
pub fn self_test(mut random: impl FnMut() -> u64, sparse_max_bytes: usize) -> Result<(), String> {
    let mut dense = new();
    to_dense(&mut dense).map_err(|_| "TESTFAILED new HLL corrupt".to_string())?;
    let mut expected = [0u8; REGISTERS];
    for _ in 0..1000 {
        let registers = &mut dense[HEADER_LEN..];
        registers.fill(0);
        for (i, e) in expected.iter_mut().enumerate() {
            *e = (random() as u8) & REGISTER_MAX;
            dense_set(registers, i, *e);
        }
        for (i, &e) in expected.iter().enumerate() {
            let got = dense_get(registers, i);
            if got != e {
                return Err(format!(
                    "TESTFAILED Register {i} should be {e} but is {got}"
                ));
            }
        }
    }
    dense[HEADER_LEN..].fill(0);
    let mut sparse = new();
    let relative_error = 1.04 / (REGISTERS as f64).sqrt();
    let seed = random();
    let mut checkpoint: u64 = 1;
    for j in 1..=10_000_000u64 {
        let element = (j ^ seed).to_le_bytes();
        add(&mut dense, &element, sparse_max_bytes).map_err(|_| "TESTFAILED corrupt")?;
        add(&mut sparse, &element, sparse_max_bytes).map_err(|_| "TESTFAILED corrupt")?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < sparse_max_bytes / 2 && encoding_of(&sparse) != Ok(Encoding::Sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let estimate = count(&dense).map_err(|_| "TESTFAILED corrupt")?;
        if count(&sparse) != Ok(estimate) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let error = checkpoint.abs_diff(estimate);
        let allowed = if j == 10 {
            1
        } else {
            (relative_error * 6.0 * checkpoint as f64).ceil() as u64
        };
        if error > allowed {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{error}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hll_of(elements: impl IntoIterator<Item = String>, max: usize) -> Vec<u8> {
        let mut hll = new();
        for e in elements {
            add(&mut hll, e.as_bytes(), max).unwrap();
        }
        hll
    }

    #[test]
    fn elements_land_in_the_registers_redis_picks() {
        // From PFDEBUG GETREG in Redis 7.0.15 after one PFADD each.
        assert_eq!(register_of(b"a"), (12711, 2));
        assert_eq!(register_of(b"foo"), (7348, 5));
        assert_eq!(register_of(b""), (5938, 2));
        assert_eq!(register_of(b"hello-world-12345"), (14578, 1));
    }

    #[test]
    fn sparse_bytes_match_redis() {
        // GET after PFADD hll 1 2 3 4 5 in Redis 7.0.15.
        let mut hll = hll_of((1..=5).map(|i| i.to_string()), 3000);
        invalidate_cache(&mut hll);
        let mut expected = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80".to_vec();
        expected.extend_from_slice(&[
            0x41, 0xee, 0x84, 0x48, 0x23, 0x80, 0x53, 0x51, 0x80, 0x4d, 0x74, 0x80, 0x51, 0x2c,
            0x8c, 0x43, 0xf3,
        ]);
        assert_eq!(hll, expected);
        assert_eq!(
            decode_sparse(&hll).unwrap(),
            "Z:495 v:2,1 Z:2084 v:1,1 Z:4946 v:1,1 Z:3445 v:1,1 Z:4397 v:4,1 Z:1012"
        );
    }

    #[test]
    fn a_new_hll_is_sparse_and_counts_zero() {
        let hll = new();
        assert_eq!(hll.len(), 18);
        assert_eq!(&hll[16..], &[0x7f, 0xff]);
        assert_eq!(encoding_of(&hll), Ok(Encoding::Sparse));
        assert_eq!(count(&hll), Ok(0));
        assert_eq!(cached_count(&hll), Some(0));
        assert_eq!(decode_sparse(&hll).unwrap(), "Z:16384");
    }

    #[test]
    fn dense_registers_keep_their_neighbours() {
        let mut regs = vec![0u8; DENSE_LEN - HEADER_LEN];
        for i in 0..REGISTERS {
            dense_set(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8, "register {i}");
        }
        assert!(!dense_set(&mut regs, 5, 1));
    }

    #[test]
    fn sparse_and_dense_agree_and_promotion_happens_at_the_limit() {
        for n in [1, 10, 100, 1000, 5000] {
            let elements = (0..n).map(|i| format!("element:{i}"));
            let sparse = hll_of(elements.clone(), 3000);
            let mut dense = new();
            to_dense(&mut dense).unwrap();
            for e in elements {
                add(&mut dense, e.as_bytes(), 3000).unwrap();
            }
            assert_eq!(count(&sparse), count(&dense), "n = {n}");
            assert_eq!(registers(&sparse), registers(&dense));
            let estimate = count(&dense).unwrap() as f64;
            assert!((estimate - n as f64).abs() <= n as f64 * 0.05 + 1.0);
            let expected = if n >= 5000 {
                Encoding::Dense
            } else {
                Encoding::Sparse
            };
            assert_eq!(encoding_of(&sparse), Ok(expected), "n = {n}");
            if expected == Encoding::Sparse {
                assert!(sparse.len() <= 3000);
            }
        }
    }

    #[test]
    fn header_checks_follow_redis() {
        assert_eq!(encoding_of(b"HYLL"), Err(NotHll));
        assert_eq!(encoding_of(b"HYLX\x01..........."), Err(NotHll));
        assert_eq!(encoding_of(b"HYLL\x02..........."), Err(NotHll));
        assert_eq!(encoding_of(b"HYLL\x00..........."), Err(NotHll));
        assert_eq!(encoding_of(b"HYLL\x01..........."), Ok(Encoding::Sparse));
    }

    #[test]
    fn corrupt_sparse_bodies_are_detected_without_panicking() {
        let mut tail = hll_of((0..3).map(|i| i.to_string()), 3000);
        tail.extend_from_slice(b"hello");
        assert_eq!(count(&tail), Err(Corrupt));
        let mut short = new();
        short.truncate(HEADER_LEN);
        short.push(0x00); // One ZERO covering register 0 only.
        assert_eq!(count(&short), Err(Corrupt));
        assert_eq!(set_register(&mut short, 5, 1, 3000), Err(Corrupt));
        assert_eq!(set_register(&mut short, 0, 1, 3000), Ok(true));
        let mut truncated = new();
        truncated.pop(); // XZERO missing its second byte: reads as zero.
        assert_eq!(count(&truncated), Err(Corrupt));
        let mut overflow = new();
        overflow.extend_from_slice(&[0xff; 10]); // VALs past the last register.
        assert_eq!(count(&overflow), Err(Corrupt));
        assert_eq!(to_dense(&mut overflow), Err(Corrupt));
        let mut max = [0u8; REGISTERS];
        assert_eq!(merge_into(&mut max, &overflow), Err(Corrupt));
    }

    #[test]
    fn every_sparse_mutation_of_short_inputs_is_safe() {
        // All 1- and 2-byte bodies, set at a few registers: never a panic,
        // and a successful set leaves an HLL that reads back the register.
        for body in (0..=0xffffu32).map(|v| v.to_be_bytes()[2..].to_vec()) {
            for index in [0, 1, 63, 64, 65, 16383] {
                let mut hll = new();
                hll.truncate(HEADER_LEN);
                hll.extend_from_slice(&body);
                let _ = set_register(&mut hll, index, 3, 3000);
                let _ = count(&hll);
                let _ = decode_sparse(&hll);
            }
        }
    }

    #[test]
    fn the_cache_bit_is_the_only_change_on_invalidation() {
        let mut hll = new();
        set_cached_count(&mut hll, 0x0102);
        invalidate_cache(&mut hll);
        assert_eq!(&hll[8..16], &[2, 1, 0, 0, 0, 0, 0, 0x80]);
        assert_eq!(cached_count(&hll), None);
    }

    #[test]
    fn estimates_match_redis() {
        // PFADD hll 1 2 3 4 5 then 6 .. 10 in Redis 7.0.15: 5 and 10.
        let mut hll = hll_of((1..=5).map(|i| i.to_string()), 3000);
        assert_eq!(count(&hll), Ok(5));
        for i in 6..=10 {
            add(&mut hll, i.to_string().as_bytes(), 3000).unwrap();
        }
        assert_eq!(count(&hll), Ok(10));
    }

    #[test]
    fn self_test_passes() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        assert_eq!(self_test(random, 3000), Ok(()));
    }
}

//! One key and what the keyspace knows about it, packed into a single
//! allocation.
//!
//! A cache holds millions of small keys, so what a key costs beyond its own
//! bytes decides how much fits. An [`Entry`] is one pointer to one heap
//! block laid out as:
//!
//! ```text
//! offset 0   access word      8 bytes, aligned (recency/frequency, atomic)
//! offset 8   flags            1 byte: payload kind, whether a deadline follows
//! offset 9   deadline         8 bytes, only for a key with a TTL
//!            key length       LEB128, 1 byte below 128
//!            value length     LEB128, only for inline string bytes
//!            key bytes
//!            payload          inline string bytes | i64 | pointer to a Value
//! ```
//!
//! An 11-byte key with a 64-byte value takes 86 bytes (94 with a TTL), one
//! allocator size class of 96 either way, where a 64-byte record in the
//! slot with separately allocated key and value cost 64 + 16 + 64 bytes.
//! The payload is:
//!
//! - the bytes themselves for a string written once (Redis's embstr/raw),
//! - the number for an integer-encoded string (Redis's int),
//! - a pointer to a boxed [`Value`] for everything edited in place: strings
//!   grown by APPEND/SETRANGE (their spare capacity keeps growth
//!   amortised) and every collection (which keep their own structures).
//!
//! The trade-off is that a layout change (adding or clearing a TTL, or
//! editing an inline string) reallocates the block: [`Entry::value_mut`]
//! moves an inline string into a boxed [`Value`] for the edit and
//! [`Entry::compact`] moves it back once the edit is done, so callers keep
//! the plain `&mut Value` API. A new string whose block would have exactly
//! the old block's size is written over it instead ([`Entry::overwrite`]),
//! which in a cache of one-size values is most SETs. Readers get a borrowed [`ValueRef`] instead of
//! a `&Value`, because an inline string is not a `Value` in memory.
//!
//! An `Entry` holds its block's address in 6 bytes: blocks are aligned to
//! 8, and user-space addresses fit 51 bits (47 on x86-64, 48 on AArch64),
//! so the address shifted right by 3 fits 48. A shard's slab keeps one
//! [`Slot`] per key, which is an `Entry` or an all-zero address for no key:
//! 6 bytes a key, where a pointer (or an `Option` of one) takes 8. Every
//! access rebuilds the pointer from three 16-bit words, which costs a few
//! register operations next to the cache miss that reading the block is.
//!
//! All unsafe code of the packed layout is in this file.

use std::alloc::{self, Layout};
use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr::{self, NonNull};

use crate::access::Access;
use crate::defrag::{move_block, relocate_box, Relocate};
use crate::size_class::allocated;
use crate::value::{Str, StrRef, Value, ValueRef};

/// Offset of the flags byte, after the access word.
const FLAGS_AT: usize = std::mem::size_of::<Access>();
/// Offset of the deadline, for a key that has one.
const DEADLINE_AT: usize = FLAGS_AT + 1;
/// Every block is aligned for the access word at offset 0.
const ALIGN: usize = std::mem::align_of::<Access>();
/// The low bits of a block's address, always zero, which its packed form
/// leaves out.
const ALIGN_BITS: u32 = ALIGN.trailing_zeros();
/// Addresses of blocks are below this; a packed address holds 48 bits.
const ADDRESS_LIMIT: usize = 1 << (48 + ALIGN_BITS);

/// Flags: what the payload holds (the low two bits).
const PAYLOAD_KIND: u8 = 0b011;
/// Payload: inline string bytes, preceded by their length.
const KIND_BYTES: u8 = 0;
/// Payload: an integer-encoded string, 8 bytes.
const KIND_INT: u8 = 1;
/// Payload: a pointer to a boxed value.
const KIND_BOXED: u8 = 2;
/// Flags: a deadline follows the flags.
const HAS_DEADLINE: u8 = 0b100;

/// Where the parts of one block are, decoded from its header.
struct Shape {
    flags: u8,
    key_at: usize,
    key_len: usize,
    payload_at: usize,
    payload_len: usize,
}

impl Shape {
    /// The block's size in bytes, which is also what it was allocated with.
    fn size(&self) -> usize {
        self.payload_at + self.payload_len
    }

    fn kind(&self) -> u8 {
        self.flags & PAYLOAD_KIND
    }
}

/// What an entry stores after its key, borrowed or owned as it is built.
enum Payload<'a> {
    Bytes(&'a [u8]),
    Int(i64),
    Boxed(Box<Value>),
}

impl Payload<'_> {
    fn kind(&self) -> u8 {
        match self {
            Payload::Bytes(_) => KIND_BYTES,
            Payload::Int(_) => KIND_INT,
            Payload::Boxed(_) => KIND_BOXED,
        }
    }

    /// The bytes it takes in the block.
    fn stored_len(&self) -> usize {
        match self {
            Payload::Bytes(bytes) => bytes.len(),
            Payload::Int(_) => std::mem::size_of::<i64>(),
            Payload::Boxed(_) => std::mem::size_of::<*mut Value>(),
        }
    }
}

/// The inline form of a string written once (int or bytes); `None` for a
/// value that stays boxed.
fn inline_payload(value: &Value) -> Option<Payload<'_>> {
    match value {
        Value::Str(Str::Int(n)) => Some(Payload::Int(*n)),
        Value::Str(Str::Fixed(bytes)) => Some(Payload::Bytes(bytes)),
        _ => None,
    }
}

/// The header after the access word, assembled on the stack so building
/// an entry allocates nothing but its block: flags, deadline and two
/// LEB128 lengths take at most 1 + 8 + 10 + 10 bytes.
struct Header {
    bytes: [u8; 29],
    len: usize,
}

impl Header {
    fn new(flags: u8) -> Header {
        let mut header = Header {
            bytes: [0; 29],
            len: 0,
        };
        header.put(&[flags]);
        header
    }

    fn put(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Appends `n` as LEB128.
    fn put_varint(&mut self, mut n: usize) {
        while n >= 0x80 {
            self.put(&[n as u8 | 0x80]);
            n >>= 7;
        }
        self.put(&[n as u8]);
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Everything a block holds after its access word, worked out before the
/// block is chosen: a new one, or an entry's own ([`Entry::overwrite`]).
pub(crate) struct Contents<'a> {
    header: Header,
    key: &'a [u8],
    payload: Payload<'a>,
}

impl<'a> Contents<'a> {
    fn new(key: &'a [u8], payload: Payload<'a>, deadline: Option<u64>) -> Contents<'a> {
        let mut header =
            Header::new(payload.kind() | if deadline.is_some() { HAS_DEADLINE } else { 0 });
        if let Some(at) = deadline {
            header.put(&at.to_ne_bytes());
        }
        header.put_varint(key.len());
        if let Payload::Bytes(bytes) = payload {
            header.put_varint(bytes.len());
        }
        Contents {
            header,
            key,
            payload,
        }
    }

    /// The contents of the string `bytes` at `key`, as
    /// `Str::from_bytes` would store it but without making that value: the
    /// number for an integer-encoded string, the bytes otherwise.
    pub(crate) fn of_str(key: &'a [u8], bytes: &'a [u8], deadline: Option<u64>) -> Contents<'a> {
        let payload = match crate::value::parse_canonical_i64(bytes) {
            Some(n) => Payload::Int(n),
            None => Payload::Bytes(bytes),
        };
        Contents::new(key, payload, deadline)
    }

    /// The size of the block that holds them.
    fn size(&self) -> usize {
        FLAGS_AT + self.header.len + self.key.len() + self.payload.stored_len()
    }

    /// Writes the whole block: `access`, then the contents.
    ///
    /// # Safety
    ///
    /// `block` is aligned for `Access`, writable for [`Contents::size`]
    /// bytes, and overlaps no source; what it held is written over, not
    /// dropped.
    unsafe fn fill(self, block: *mut u8, access: Access) {
        let int_bytes;
        let tail: &[u8] = match &self.payload {
            Payload::Bytes(bytes) => bytes,
            Payload::Int(n) => {
                int_bytes = n.to_ne_bytes();
                &int_bytes
            }
            Payload::Boxed(_) => &[],
        };
        // SAFETY: the writes cover the block's size exactly, in order, as
        // the caller promises room for.
        unsafe {
            block.cast::<Access>().write(access);
            let mut at = block.add(FLAGS_AT);
            for part in [self.header.as_slice(), self.key, tail] {
                ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
            if let Payload::Boxed(value) = self.payload {
                at.cast::<*mut Value>()
                    .write_unaligned(Box::into_raw(value));
            }
        }
    }
}

/// One key and what the keyspace knows about it: its value, its deadline
/// (if it has a TTL) and its access word, in one allocation.
///
/// `address` is the block's address shifted right by [`ALIGN_BITS`], low
/// word first; it is never zero for an `Entry` (all zeros is a vacant
/// [`Slot`]).
#[repr(C)]
pub struct Entry {
    address: [u16; 3],
}

// The integer words make Entry Send and Sync by themselves; what makes
// that sound is that an Entry owns its block as a Box owns its contents:
// nothing else points into it, the access word shared between readers is
// atomic, and the boxed Value it may own is itself Send and Sync.

/// The Send and Sync claims above rely on this.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Value>();
};

impl Entry {
    /// The entry owning `block`.
    fn from_block(block: NonNull<u8>) -> Entry {
        let address = block.as_ptr().expose_provenance();
        assert!(
            address < ADDRESS_LIMIT,
            "an entry block at {address:#x} is past the 51-bit address space entries can hold"
        );
        let packed = address >> ALIGN_BITS;
        Entry {
            address: [packed as u16, (packed >> 16) as u16, (packed >> 32) as u16],
        }
    }

    /// The block's first byte.
    fn block(&self) -> *mut u8 {
        let [low, middle, high] = self.address.map(usize::from);
        let packed = low | middle << 16 | high << 32;
        ptr::with_exposed_provenance_mut(packed << ALIGN_BITS)
    }

    /// Packs `key`, `value`, the deadline and the access word into one
    /// block; a string written once goes inline, anything else is boxed.
    pub(crate) fn new(
        key: &[u8],
        value: Value,
        expire_at_ms: Option<u64>,
        access: Access,
    ) -> Entry {
        if let Some(inline) = inline_payload(&value) {
            return Entry::build(key, inline, expire_at_ms, access);
        }
        Entry::build(key, Payload::Boxed(Box::new(value)), expire_at_ms, access)
    }

    /// Allocates a block and fills it.
    pub(crate) fn with_contents(contents: Contents<'_>, access: Access) -> Entry {
        let layout =
            Layout::from_size_align(contents.size(), ALIGN).expect("entry size fits a layout");
        // SAFETY: `layout` has a non-zero size (the access word alone is 8
        // bytes).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(block) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        // SAFETY: a fresh block of the contents' size.
        unsafe { contents.fill(block.as_ptr(), access) };
        Entry::from_block(block)
    }

    fn build(key: &[u8], payload: Payload<'_>, deadline: Option<u64>, access: Access) -> Entry {
        Entry::with_contents(Contents::new(key, payload, deadline), access)
    }

    /// True if `contents` would take exactly this entry's block, which
    /// owns no boxed value: [`Entry::overwrite`] can reuse it.
    pub(crate) fn fits_in_place(&self, contents: &Contents<'_>) -> bool {
        let shape = self.shape();
        shape.kind() != KIND_BOXED && shape.size() == contents.size()
    }

    /// Writes `contents` and `access` over this entry's block, so a SET of
    /// a value as long as the one it replaces allocates and frees nothing.
    /// Panics unless [`Entry::fits_in_place`]; `contents` holds the
    /// entry's own key.
    pub(crate) fn overwrite(&mut self, contents: Contents<'_>, access: Access) {
        assert!(self.fits_in_place(&contents), "contents fit the block");
        debug_assert_eq!(contents.key, self.key());
        // SAFETY: the block is this entry's, borrowed mutably, has the
        // contents' size and owns no boxed value, so writing over it leaks
        // nothing.
        unsafe { contents.fill(self.block(), access) };
    }

    /// Reads the header of the block.
    fn shape(&self) -> Shape {
        let base = self.block();
        // SAFETY: every block starts with the access word and the flags
        // byte, and the offsets read here follow the header `build` wrote,
        // so each read stays inside the block.
        unsafe {
            let flags = *base.add(FLAGS_AT);
            let mut at = if flags & HAS_DEADLINE != 0 {
                DEADLINE_AT + 8
            } else {
                DEADLINE_AT
            };
            let mut varint = || {
                let mut n = 0usize;
                let mut shift = 0;
                loop {
                    let byte = *base.add(at);
                    at += 1;
                    n |= ((byte & 0x7f) as usize) << shift;
                    if byte < 0x80 {
                        return n;
                    }
                    shift += 7;
                }
            };
            let key_len = varint();
            let payload_len = match flags & PAYLOAD_KIND {
                KIND_BYTES => varint(),
                KIND_INT => std::mem::size_of::<i64>(),
                _ => std::mem::size_of::<*mut Value>(),
            };
            Shape {
                flags,
                key_at: at,
                key_len,
                payload_at: at + key_len,
                payload_len,
            }
        }
    }

    /// The bytes at `offset..offset + len` of the block.
    fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        // SAFETY: callers pass ranges from `shape`, which lie inside the
        // block; the block lives as long as `self` and is not written while
        // shared.
        unsafe { std::slice::from_raw_parts(self.block().add(offset), len) }
    }

    /// The boxed value of a block whose payload is a pointer.
    fn boxed(&self, shape: &Shape) -> *mut Value {
        debug_assert_eq!(shape.kind(), KIND_BOXED);
        // SAFETY: a boxed payload is a pointer written by `build`, inside
        // the block.
        unsafe {
            self.block()
                .add(shape.payload_at)
                .cast::<*mut Value>()
                .read_unaligned()
        }
    }

    /// A copy of the entry, history included, for a snapshot that must
    /// keep it as it is now.
    pub(crate) fn duplicate(&self) -> Entry {
        Entry::new(
            self.key(),
            self.value().to_value(),
            self.expire_at_ms(),
            self.access().duplicate(),
        )
    }

    /// The key's bytes.
    pub fn key(&self) -> &[u8] {
        let shape = self.shape();
        self.bytes(shape.key_at, shape.key_len)
    }

    /// The stored value.
    pub fn value(&self) -> ValueRef<'_> {
        let shape = self.shape();
        match shape.kind() {
            KIND_BYTES => ValueRef::Str(StrRef::Fixed(
                self.bytes(shape.payload_at, shape.payload_len),
            )),
            KIND_INT => {
                let bytes = self.bytes(shape.payload_at, shape.payload_len);
                ValueRef::Str(StrRef::Int(i64::from_ne_bytes(
                    bytes.try_into().expect("an int payload is 8 bytes"),
                )))
            }
            // SAFETY: the pointer came from `Box::into_raw` and the entry
            // owns it; shared access to the entry gives shared access to it.
            _ => unsafe { (*self.boxed(&shape)).view() },
        }
    }

    /// The value, for in-place changes. An inline string moves into a
    /// boxed [`Value`] first; [`Entry::compact`] moves it back.
    pub(crate) fn value_mut(&mut self) -> &mut Value {
        let mut shape = self.shape();
        if shape.kind() != KIND_BOXED {
            let value = Box::new(self.value().to_value());
            let rebuilt = self.rebuilt(self.expire_at_ms(), Payload::Boxed(value));
            self.replace_block(rebuilt);
            shape = self.shape();
        }
        let boxed = self.boxed(&shape);
        // SAFETY: the entry owns the boxed value and is borrowed mutably
        // for as long as the returned reference.
        unsafe { &mut *boxed }
    }

    /// True if the value is an integer-encoded string kept inline, which
    /// [`Entry::set_int`] changes in place.
    pub(crate) fn holds_int(&self) -> bool {
        self.shape().kind() == KIND_INT
    }

    /// Makes the value the integer-encoded string `n`: in place when it
    /// is one already, so INCR and DECR build no new block (through
    /// [`Entry::value_mut`] each cost three allocations).
    pub(crate) fn set_int(&mut self, n: i64) {
        let shape = self.shape();
        if shape.kind() != KIND_INT {
            *self.value_mut() = Value::Str(Str::Int(n));
            return;
        }
        // SAFETY: an int payload is the 8 bytes at `payload_at`, inside
        // the block, which this entry owns and borrows mutably.
        unsafe {
            let payload = self.block().add(shape.payload_at);
            ptr::write_unaligned(payload.cast::<[u8; 8]>(), n.to_ne_bytes());
        }
    }

    /// Moves a boxed value that a string written once (int or bytes) back
    /// inline, after an edit through [`Entry::value_mut`].
    pub(crate) fn compact(&mut self) {
        let shape = self.shape();
        if shape.kind() != KIND_BOXED {
            return;
        }
        let boxed = self.boxed(&shape);
        // SAFETY: the entry owns the boxed value; it is only read here.
        if inline_payload(unsafe { &*boxed }).is_none() {
            return;
        }
        // SAFETY: the value is taken out of the entry here: the old block
        // is released without dropping it, and it is dropped on return,
        // after its bytes were copied into the new block.
        let value = unsafe { Box::from_raw(boxed) };
        let inline = inline_payload(&value).expect("checked above");
        let rebuilt = self.rebuilt(self.expire_at_ms(), inline);
        self.replace_block(rebuilt);
    }

    /// Asks the CPU to load the start of the block: header, key and a
    /// short value.
    pub(crate) fn prefetch(&self) {
        crate::prefetch::read(self.block());
    }

    /// Recency/frequency for OBJECT and eviction.
    pub fn access(&self) -> &Access {
        // SAFETY: every block starts with an initialised, aligned access
        // word, and `Access` is only ever shared.
        unsafe { &*self.block().cast::<Access>() }
    }

    /// The deadline in Unix milliseconds, if the key has a TTL.
    pub fn expire_at_ms(&self) -> Option<u64> {
        // SAFETY: the flags byte is always present.
        let flags = unsafe { *self.block().add(FLAGS_AT) };
        (flags & HAS_DEADLINE != 0).then(|| {
            let bytes = self.bytes(DEADLINE_AT, 8);
            u64::from_ne_bytes(bytes.try_into().expect("a deadline is 8 bytes"))
        })
    }

    /// Heap bytes the block takes beyond its own to hold a deadline too:
    /// its 8 bytes, as the allocator's size classes round them.
    pub(crate) fn block_growth_for_deadline(&self) -> usize {
        let size = self.shape().size();
        allocated(size + 8) - allocated(size)
    }

    /// Sets or clears the deadline. The block is rebuilt when the key
    /// gains or loses a TTL, since the deadline takes room only when set.
    pub(crate) fn set_expire_at_ms(&mut self, at: Option<u64>) {
        match (self.expire_at_ms(), at) {
            (Some(_), Some(at)) => {
                // SAFETY: the block has a deadline at DEADLINE_AT, and the
                // entry is borrowed mutably.
                unsafe {
                    self.block()
                        .add(DEADLINE_AT)
                        .cast::<u64>()
                        .write_unaligned(at)
                }
            }
            (None, None) => {}
            _ => {
                let shape = self.shape();
                let payload = match shape.kind() {
                    // SAFETY: ownership of the boxed value passes to the
                    // new block; `replace_block` frees the old one without
                    // dropping it.
                    KIND_BOXED => Payload::Boxed(unsafe { Box::from_raw(self.boxed(&shape)) }),
                    _ => match self.value() {
                        ValueRef::Str(StrRef::Int(n)) => Payload::Int(n),
                        _ => Payload::Bytes(self.bytes(shape.payload_at, shape.payload_len)),
                    },
                };
                let rebuilt = self.rebuilt(at, payload);
                self.replace_block(rebuilt);
            }
        }
    }

    /// A new block with this entry's key and access word, holding
    /// `payload` and `deadline`, to replace this one's.
    fn rebuilt(&self, deadline: Option<u64>, payload: Payload<'_>) -> Entry {
        Entry::build(self.key(), payload, deadline, self.access().duplicate())
    }

    /// Takes `rebuilt`'s block and frees the old one without dropping its
    /// payload, whose ownership the new block has taken or which the
    /// caller drops.
    fn replace_block(&mut self, rebuilt: Entry) {
        let old = std::mem::replace(self, rebuilt);
        let layout = old.layout();
        let block = ManuallyDrop::new(old).block();
        // SAFETY: the block was allocated with this layout and nothing
        // refers to it any more.
        unsafe { alloc::dealloc(block, layout) }
    }

    /// Moves the block where `mover` allocates, if `mover` asks for it
    /// (see `crate::defrag`), and for a boxed value, the box and what the
    /// value owns directly (`Value::relocate`). True if anything moved.
    pub(crate) fn relocate(&mut self, mover: &mut dyn Relocate) -> bool {
        let layout = self.layout();
        let old = NonNull::new(self.block()).expect("a live entry has a block");
        // SAFETY: the entry's block, allocated with `layout`, and `&mut
        // self` keeps every other user out (the access word included).
        let block_moved = match unsafe { move_block(old, layout, mover) } {
            Some(new) => {
                // The old block is freed: the entry is forgotten, not dropped.
                let _ = ManuallyDrop::new(std::mem::replace(self, Entry::from_block(new)));
                true
            }
            None => false,
        };
        let shape = self.shape();
        if shape.kind() != KIND_BOXED {
            return block_moved;
        }
        // SAFETY: the entry owns the boxed value, and the pointer is
        // written back below, whatever moved.
        let mut value = unsafe { Box::from_raw(self.boxed(&shape)) };
        let value_moved = relocate_box(&mut value, mover) | value.relocate(mover);
        // SAFETY: the pointer's place in the block, as `build` wrote it.
        unsafe {
            self.block()
                .add(shape.payload_at)
                .cast::<*mut Value>()
                .write_unaligned(Box::into_raw(value));
        }
        block_moved | value_moved
    }

    fn layout(&self) -> Layout {
        Layout::from_size_align(self.shape().size(), ALIGN).expect("allocated with this layout")
    }

    /// True once the deadline has passed: the key no longer exists for any
    /// reader, whether or not it has been reclaimed yet.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms().is_some_and(|at| at <= now_ms)
    }

    /// Heap bytes this entry owns, as allocated: its block and, for a
    /// boxed value, the value and what it holds.
    pub fn heap_bytes(&self) -> usize {
        let shape = self.shape();
        let boxed = match shape.kind() {
            // SAFETY: as in `value`, whose header decoding this spares.
            KIND_BOXED => {
                allocated(std::mem::size_of::<Value>())
                    + unsafe { (*self.boxed(&shape)).heap_bytes() }
            }
            _ => 0,
        };
        allocated(shape.size()) + boxed
    }

    /// The value, owned; an inline string becomes a [`Str`] again.
    pub(crate) fn into_value(self) -> Value {
        let shape = self.shape();
        match shape.kind() {
            KIND_BOXED => {
                // SAFETY: ownership of the boxed value moves out; the block
                // is freed without dropping it.
                let value = unsafe { Box::from_raw(self.boxed(&shape)) };
                let layout = self.layout();
                let block = ManuallyDrop::new(self).block();
                // SAFETY: allocated with this layout; nothing refers to it.
                unsafe { alloc::dealloc(block, layout) }
                *value
            }
            _ => self.value().to_value(),
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let shape = self.shape();
        if shape.kind() == KIND_BOXED {
            // SAFETY: the entry owns the boxed value and is going away.
            drop(unsafe { Box::from_raw(self.boxed(&shape)) });
        }
        let layout = self.layout();
        // SAFETY: allocated with this layout in `build`; nothing refers to
        // the block once the entry is dropped.
        unsafe { alloc::dealloc(self.block(), layout) }
    }
}

/// A slab slot: an [`Entry`], or none as an all-zero address, in the
/// entry's 6 bytes (an `Option<Entry>` takes 8: a packed address leaves the
/// compiler no spare value to mark `None` with).
#[repr(transparent)]
pub(crate) struct Slot(ManuallyDrop<Entry>);

impl Slot {
    /// The address of no block: a vacant slot's.
    const NO_ADDRESS: [u16; 3] = [0; 3];

    /// A slot holding nothing.
    pub(crate) const VACANT: Slot = Slot(ManuallyDrop::new(Entry {
        address: Slot::NO_ADDRESS,
    }));

    fn is_vacant(&self) -> bool {
        self.0.address == Slot::NO_ADDRESS
    }

    /// The entry in the slot.
    pub(crate) fn get(&self) -> Option<&Entry> {
        (!self.is_vacant()).then_some(&*self.0)
    }

    /// The entry in the slot, for changes (which may move its block).
    pub(crate) fn get_mut(&mut self) -> Option<&mut Entry> {
        (!self.is_vacant()).then_some(&mut *self.0)
    }

    /// Takes the entry out, leaving the slot vacant.
    pub(crate) fn take(&mut self) -> Option<Entry> {
        if self.is_vacant() {
            return None;
        }
        let entry = Entry {
            address: self.0.address,
        };
        self.0.address = Slot::NO_ADDRESS;
        Some(entry)
    }

    /// Puts `entry` into the slot, which must be vacant.
    pub(crate) fn put(&mut self, entry: Entry) {
        assert!(self.is_vacant(), "a slot is filled only when vacant");
        self.0 = ManuallyDrop::new(entry);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl fmt::Debug for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("key", &String::from_utf8_lossy(self.key()))
            .field("value", &self.value())
            .field("expire_at_ms", &self.expire_at_ms())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{AccessConfig, Clock};
    use crate::types::{Hash, Limits};

    fn access() -> Access {
        Access::new(&AccessConfig::default(), Clock { micros: 7 })
    }

    fn string(bytes: &[u8]) -> Value {
        Value::Str(Str::from_bytes(bytes))
    }

    #[test]
    fn small_string_key_fits_one_size_class() {
        let key = b"key:0000001";
        let plain = Entry::new(key, string(&[b'v'; 64]), None, access());
        assert_eq!(plain.shape().size(), 8 + 1 + 1 + 1 + 11 + 64);
        assert_eq!(plain.heap_bytes(), 96);
        let with_ttl = Entry::new(key, string(&[b'v'; 64]), Some(1), access());
        assert_eq!(with_ttl.shape().size(), plain.shape().size() + 8);
        assert_eq!(with_ttl.heap_bytes(), 96);
    }

    #[test]
    fn a_string_written_straight_in_is_the_entry_of_its_value() {
        let big = vec![b'x'; 70_000];
        for bytes in [&b""[..], b"v", b"12345", b"-7", b"007", b"1e3", &big] {
            for deadline in [None, Some(1_000)] {
                let straight =
                    Entry::with_contents(Contents::of_str(b"k", bytes, deadline), access());
                let boxed_first = Entry::new(b"k", string(bytes), deadline, access());
                assert_eq!(
                    straight.value(),
                    boxed_first.value(),
                    "{:?}",
                    &bytes[..bytes.len().min(8)]
                );
                assert_eq!(straight.heap_bytes(), boxed_first.heap_bytes());
                assert_eq!(straight.expire_at_ms(), deadline);
            }
        }
    }

    #[test]
    fn a_string_of_the_same_block_size_is_written_over_its_block() {
        let first = b"abcdefghijklmno";
        let mut entry = Entry::with_contents(Contents::of_str(b"k", first, None), access());
        let block = entry.block();
        // Each takes the 27 bytes the first took: 15 bytes of value; a
        // number (8 bytes, no length) with a deadline (8); 7 bytes of value
        // with a deadline.
        let same_size: [(&[u8], Option<u64>); 3] = [
            (b"onmlkjihgfedcba", None),
            (b"1234", Some(5_000)),
            (b"abcdefg", Some(6_000)),
        ];
        for (bytes, deadline) in same_size {
            let contents = Contents::of_str(b"k", bytes, deadline);
            assert!(entry.fits_in_place(&contents), "{bytes:?}");
            entry.overwrite(contents, access());
            assert_eq!(entry.block(), block);
            assert_eq!(entry.value(), string(bytes).view());
            assert_eq!(entry.expire_at_ms(), deadline);
            assert_eq!(entry.key(), b"k");
        }
        let other_sizes: [(&[u8], Option<u64>); 3] = [
            (b"1234", None),
            (b"abcdefghijklmnop", None),
            (b"abcdefg", None),
        ];
        for (bytes, deadline) in other_sizes {
            let contents = Contents::of_str(b"k", bytes, deadline);
            assert!(!entry.fits_in_place(&contents), "{bytes:?}");
        }
        let boxed = Entry::new(b"k", Value::Hash(Hash::default()), None, access());
        assert!(!boxed.fits_in_place(&Contents::of_str(b"k", first, None)));
    }

    #[test]
    fn every_payload_reads_back() {
        let long_key = vec![b'k'; 300];
        let long_value = vec![b'v'; 20_000];
        for key in [&b""[..], b"k", &long_key] {
            for deadline in [None, Some(u64::MAX)] {
                for value in [string(b""), string(b"-12"), string(&long_value)] {
                    let entry = Entry::new(key, value.clone(), deadline, access());
                    assert_eq!(entry.key(), key);
                    assert_eq!(entry.value(), value.view());
                    assert_eq!(entry.expire_at_ms(), deadline);
                    assert_eq!(entry.access().idle_micros(Clock { micros: 10 }), 3);
                    assert_eq!(entry.into_value(), value);
                }
            }
        }
    }

    #[test]
    fn edits_move_strings_out_and_back_inline() {
        let mut entry = Entry::new(b"k", string(b"41"), Some(5), access());
        let inline = entry.heap_bytes();
        *entry.value_mut().as_str_mut().unwrap() = Str::Int(42);
        assert!(entry.heap_bytes() > inline, "boxed while edited");
        entry.compact();
        assert_eq!(entry.heap_bytes(), inline);
        assert_eq!(entry.value(), ValueRef::Str(StrRef::Int(42)));

        entry
            .value_mut()
            .as_str_mut()
            .unwrap()
            .make_growable()
            .push(b'0');
        entry.compact();
        assert_eq!(
            entry.value().encoding(),
            "raw",
            "appended strings stay growable"
        );
        assert_eq!(entry.value().as_str().unwrap().to_bytes(), &b"420"[..]);
        assert_eq!(entry.expire_at_ms(), Some(5));
    }

    #[test]
    fn an_integer_is_set_in_place_once_the_value_is_one() {
        for (value, deadline) in [(string(b"7"), None), (string(b"seven"), Some(9))] {
            let mut entry = Entry::new(b"k", value, deadline, access());
            entry.set_int(-3);
            entry.compact();
            assert_eq!(entry.value(), ValueRef::Str(StrRef::Int(-3)));
            let block = entry.block();
            entry.set_int(i64::MAX);
            assert_eq!(entry.block(), block, "the same block");
            assert_eq!(entry.value(), ValueRef::Str(StrRef::Int(i64::MAX)));
            assert_eq!(entry.expire_at_ms(), deadline);
            assert_eq!(entry.key(), b"k");
        }
    }

    #[test]
    fn deadlines_come_and_go_for_every_payload() {
        let mut hash = Hash::default();
        hash.set(b"f", b"v", &Limits::default());
        for value in [string(b"abc"), string(b"7"), Value::Hash(hash)] {
            let mut entry = Entry::new(b"key", value.clone(), None, access());
            let (plain, block) = (entry.heap_bytes(), entry.shape().size());
            entry.set_expire_at_ms(Some(10));
            assert_eq!(entry.shape().size(), block + 8);
            assert_eq!(
                entry.heap_bytes(),
                plain - allocated(block) + allocated(block + 8)
            );
            entry.set_expire_at_ms(Some(20));
            assert_eq!(entry.expire_at_ms(), Some(20));
            entry.set_expire_at_ms(None);
            assert_eq!(entry.heap_bytes(), plain);
            assert_eq!(entry.key(), b"key");
            assert_eq!(entry.value(), value.view());
        }
    }

    #[test]
    fn a_slot_holds_an_entry_or_nothing_in_six_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 6);
        let mut slot = Slot::VACANT;
        assert!(slot.get().is_none() && slot.take().is_none());
        let entry = Entry::new(b"key", string(b"value"), Some(5), access());
        let block = entry.block();
        assert!(!block.is_null() && (block as usize).is_multiple_of(ALIGN));
        slot.put(entry);
        let held = slot.get().expect("a filled slot holds its entry");
        assert_eq!(held.block(), block, "the address survives packing");
        assert_eq!((held.key(), held.expire_at_ms()), (&b"key"[..], Some(5)));
        // A change that moves the block is seen through the slot.
        slot.get_mut().expect("filled").set_expire_at_ms(None);
        assert_eq!(slot.get().map(Entry::expire_at_ms), Some(None));
        let taken = slot.take().expect("a filled slot gives its entry");
        assert_eq!(taken.value(), string(b"value").view());
        assert!(slot.get().is_none(), "taking leaves the slot vacant");
        // Dropped while filled: the slot frees its entry.
        slot.put(taken);
    }
}

//! What the bitmap commands share: Redis's bit offset argument
//! (`getBitOffsetFromArgument`), reading the string a bitmap is, and
//! growing it for a write (`lookupStringForBitCommand`).

use keel_store::bits::Unit;
use keel_store::size_class::allocated;
use keel_store::{Lookup, Str, Value};

use super::edit::{edit, Edit};
use super::{errors, is, Ctx, Error, Events};

/// A bit offset that is not a number, is negative, or lies past
/// proto-max-bulk-len.
pub const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// Parses a bit offset. With `field_bits` (BITFIELD), `#N` means the N-th
/// field of that width; the product wraps as Redis's does. The offset's
/// byte must be within proto-max-bulk-len.
pub fn bit_offset(ctx: &Ctx, arg: &[u8], field_bits: Option<u32>) -> Result<u64, Error> {
    let (digits, times) = match (arg.strip_prefix(b"#"), field_bits) {
        (Some(n), Some(bits)) => (n, bits as i64),
        _ => (arg, 1),
    };
    let offset = keel_store::parse_canonical_i64(digits)
        .ok_or(Error::from(BIT_OFFSET))?
        .wrapping_mul(times);
    let max = ctx.server.config.read().proto_max_bulk_len;
    match u64::try_from(offset) {
        Ok(offset) if offset >> 3 < max => Ok(offset),
        _ => Err(BIT_OFFSET.into()),
    }
}

/// Runs `read` on the bytes of the string at `key` (integers formatted),
/// `None` when it is missing; WRONGTYPE for another type. Counts the
/// lookup as Redis's read lookups do.
pub fn read_bits<R>(
    ctx: &mut Ctx,
    key: &[u8],
    read: impl FnOnce(Option<&[u8]>) -> Result<R, Error>,
) -> Result<R, Error> {
    let db = ctx.db();
    let shard = db.read(key);
    let entry = shard.get(key);
    ctx.count_lookup(key, entry.is_some());
    match entry.map(|e| e.value().as_str()) {
        None => read(None),
        Some(Some(s)) => read(Some(&s.to_bytes())),
        Some(None) => Err(errors::WRONGTYPE.into()),
    }
}

/// Runs `write` on the bytes of the string at `key`, first grown with zero
/// bytes to hold bit `last_bit` (a missing key is created), having
/// reserved the memory that takes. `write` learns whether the string was
/// created or grew (a change whatever it writes, as Redis counts it) and
/// says whether it changed anything. The string ends raw, as Redis's
/// `dbUnshareStringValue` leaves it; a new one is sized exactly and an
/// existing one grows greedily, as `sdsnewlen` and `sdsgrowzero` do.
/// A change publishes the `setbit` keyspace event.
pub fn write_bits<R>(
    ctx: &mut Ctx,
    key: &[u8],
    last_bit: u64,
    write: impl FnOnce(&mut [u8], bool) -> Edit<R>,
) -> Result<R, Error> {
    let len = usize::try_from((last_bit >> 3) + 1).map_err(|_| Error::from(errors::OOM))?;
    let db = ctx.db();
    let mut shard = db.write(key);
    let mut changed = false;
    let result = match shard.entry(key) {
        Lookup::Found(mut entry) => edit(&mut entry, Value::as_str_mut, |s| {
            let grown = len > s.len();
            let bytes = if grown {
                ctx.reserve(s.growth_to(len))?;
                let bytes = s.grow_to(len);
                bytes.resize(len, 0);
                bytes
            } else {
                s.make_growable()
            };
            let edit = write(bytes, grown);
            changed = edit.is_changed();
            Ok(edit)
        }),
        Lookup::Missing(vacant) => {
            ctx.reserve(allocated(len))?;
            let mut bytes = vec![0; len];
            let result = write(&mut bytes, true).into_result();
            changed = true;
            vacant.insert(Value::Str(Str::Growable(bytes)), None);
            Ok(result)
        }
    };
    drop(shard);
    if changed {
        ctx.notify(Events::STRING, "setbit", key);
    }
    result
}

/// BITCOUNT's and BITPOS's `BYTE | BIT` option.
pub fn unit(arg: &[u8]) -> Result<Unit, Error> {
    if is(arg, "byte") {
        Ok(Unit::Byte)
    } else if is(arg, "bit") {
        Ok(Unit::Bit)
    } else {
        Err(errors::SYNTAX.into())
    }
}

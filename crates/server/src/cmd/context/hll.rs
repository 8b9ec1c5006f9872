//! What the HyperLogLog commands share: Redis's two HLL errors, the check
//! that a string holds an HLL, and storing a changed HLL, its growth
//! reserved first.

use keel_store::hll::{self, Corrupt, Encoding};
use keel_store::{Str, ValueRef};

use super::{errors, Ctx, Error};

/// A string that is not an HLL.
pub const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// An HLL whose body is corrupt.
pub const INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

/// Redis's INVALIDOBJ for a corrupt body.
pub fn invalid(_: Corrupt) -> Error {
    INVALID.into()
}

/// The bytes of the HLL stored in `value` and its encoding: WRONGTYPE for
/// another type, and Redis's HLL flavour of it for a string that is not
/// an HLL.
pub fn bytes_of(value: ValueRef<'_>) -> Result<(std::borrow::Cow<'_, [u8]>, Encoding), Error> {
    let bytes = value.as_str().ok_or(errors::WRONGTYPE)?.to_bytes();
    let encoding = hll::encoding_of(&bytes).map_err(|_| NOT_HLL)?;
    Ok((bytes, encoding))
}

/// Replaces the stored HLL `s` with `hll`, reserving what it grows by
/// first.
pub fn replace(ctx: &mut Ctx, s: &mut Str, hll: Vec<u8>) -> Result<(), Error> {
    let new = hll::into_str(hll);
    ctx.reserve(new.heap_bytes().saturating_sub(s.heap_bytes()))?;
    *s = new;
    Ok(())
}

/// Stores `hll` as a new value, reserving its size first.
pub fn new_value(ctx: &mut Ctx, hll: Vec<u8>) -> Result<keel_store::Value, Error> {
    let new = hll::into_str(hll);
    ctx.reserve(new.heap_bytes())?;
    Ok(keel_store::Value::Str(new))
}

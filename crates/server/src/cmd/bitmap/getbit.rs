//! GETBIT key offset — the bit at offset in the string at key; 0 past its
//! end or for a missing key.

use bytes::Bytes;
use keel_store::bits;

use crate::cmd::context::bitmap::{bit_offset, read_bits};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// GETBIT.
pub const SPEC: Spec = Spec {
    name: "getbit",
    arity: 3,
    flags: &["readonly", "fast"],
    keys: (1, 1, 1),
    acl: &["@read", "@bitmap", "@fast"],
    group: "bitmap",
    summary: "Returns the bit value at offset in the string value stored at key",
    since: "2.2.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let offset = bit_offset(ctx, &args[2], None)?;
    let bit = read_bits(ctx, &args[1], |s| {
        Ok(s.is_some_and(|s| bits::get_bit(s, offset)))
    })?;
    ctx.w().integer(bit as i64);
    Ok(())
}

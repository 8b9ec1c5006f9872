//! SETBIT key offset value — set or clear one bit of the string at key,
//! growing it with zero bytes (or creating it) to reach the bit; replies
//! with the bit's previous value.

use bytes::Bytes;
use keel_store::bits;

use crate::cmd::context::bitmap::{bit_offset, write_bits};
use crate::cmd::context::edit::Edit;
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// SETBIT.
pub const SPEC: Spec = Spec {
    name: "setbit",
    arity: 4,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@write", "@bitmap", "@slow"],
    group: "bitmap",
    summary: "Sets or clears the bit at offset in the string value stored at key",
    since: "2.2.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let offset = bit_offset(ctx, &args[2], None)?;
    let on = match &args[3][..] {
        b"0" => false,
        b"1" => true,
        _ => return Err("ERR bit is not an integer or out of range".into()),
    };
    // A bit that keeps its value changes nothing, unless the string grew.
    let old = write_bits(ctx, &args[1], offset, |bytes, grown| {
        let old = bits::set_bit(bytes, offset, on);
        Edit::changed_if(grown || old != on, old)
    })?;
    ctx.w().integer(old as i64);
    Ok(())
}

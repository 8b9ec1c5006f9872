//! BITPOS key bit [start [end [BYTE | BIT]]] — the position of the first
//! bit set to 1 or 0 in the string at key, or in a range of it.
//!
//! Redis's rules for what is not found: a missing key is all zeros (0 for
//! a clear bit, -1 for a set bit, whatever the range); a clear bit looked
//! for without an explicit end is found just past the string, as if it
//! were padded with zeros, while with an end given (or for a set bit) the
//! reply is -1, as for an empty range.

use bytes::Bytes;
use keel_store::bits::{self, Range, Unit};

use crate::cmd::context::bitmap::{read_bits, unit};
use crate::cmd::context::{errors, parse_i64, Ctx, Error, Spec, BASE};

/// BITPOS.
pub const SPEC: Spec = Spec {
    name: "bitpos",
    arity: -3,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@bitmap", "@slow"],
    group: "bitmap",
    summary: "Find first bit set or clear in a string",
    since: "2.8.7",
    complexity: "O(N)",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let bit = match parse_i64(&args[2])? {
        0 => false,
        1 => true,
        _ => return Err("ERR The bit argument must be 1 or 0.".into()),
    };
    let position = read_bits(ctx, &args[1], |s| {
        let Some(s) = s else {
            return Ok(if bit { -1 } else { 0 });
        };
        let (range, end_given) = match &args[3..] {
            [] => (Range::whole(s.len()), false),
            [start, rest @ ..] if rest.len() <= 2 => {
                let start = parse_i64(start)?;
                let unit = rest.get(1).map_or(Ok(Unit::Byte), |u| unit(u))?;
                let end = rest.first().map(|e| parse_i64(e)).transpose()?;
                let range = Range::resolve(start, end.unwrap_or(-1), s.len(), unit);
                (range, end.is_some())
            }
            _ => return Err(errors::SYNTAX.into()),
        };
        let Some(range) = range else { return Ok(-1) };
        Ok(match bits::first_bit(s, bit, range) {
            Some(position) => position as i64,
            None if !bit && !end_given => (range.last + 1) as i64,
            None => -1,
        })
    })?;
    ctx.w().integer(position);
    Ok(())
}

//! BITCOUNT key [start end [BYTE | BIT]] — the number of set bits in the
//! string at key, or in a range of it (bytes by default, bits with BIT;
//! negative indexes count from the end).
//!
//! As in Redis 7.0, the key is looked up before the range is parsed: a
//! missing key replies 0 whatever the arguments.

use bytes::Bytes;
use keel_store::bits::{self, Range, Unit};

use crate::cmd::context::bitmap::{read_bits, unit};
use crate::cmd::context::{errors, parse_i64, Ctx, Error, Spec, BASE};

/// BITCOUNT.
pub const SPEC: Spec = Spec {
    name: "bitcount",
    arity: -2,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@bitmap", "@slow"],
    group: "bitmap",
    summary: "Count set bits in a string",
    since: "2.6.0",
    complexity: "O(N)",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let count = read_bits(ctx, &args[1], |s| {
        let Some(s) = s else { return Ok(0) };
        let range = match &args[2..] {
            [] => Range::whole(s.len()),
            [start, end, rest @ ..] if rest.len() <= 1 => {
                let (start, end) = (parse_i64(start)?, parse_i64(end)?);
                // Both ends negative and crossed: empty, before clamping
                // could make them meet at 0, and before the unit is read.
                if start < 0 && end < 0 && start > end {
                    return Ok(0);
                }
                let unit = rest.first().map_or(Ok(Unit::Byte), |u| unit(u))?;
                Range::resolve(start, end, s.len(), unit)
            }
            _ => return Err(errors::SYNTAX.into()),
        };
        Ok(range.map_or(0, |r| bits::count_ones(s, r)))
    })?;
    ctx.w().integer(count as i64);
    Ok(())
}

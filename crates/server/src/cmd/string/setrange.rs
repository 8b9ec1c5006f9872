//! SETRANGE key offset value — overwrite part of a string, padding with
//! zero bytes, within Redis's 512 MB (proto-max-bulk-len) cap.

use bytes::Bytes;
use keel_store::{Lookup, Str, Value};

use crate::cmd::context::edit::{edit, Edit};
use crate::cmd::context::strings::check_length;
use crate::cmd::context::{parse_i64, Ctx, Error, Events, Spec, BASE};

/// SETRANGE.
pub const SPEC: Spec = Spec {
    name: "setrange",
    arity: 4,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@slow"],
    group: "string",
    summary: "Overwrite part of a string at key starting at the specified offset",
    since: "2.2.0",
    complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (key, value) = (&args[1], &args[3]);
    let offset = parse_i64(&args[2])?;
    if offset < 0 {
        return Err("ERR offset is out of range".into());
    }
    let offset = offset as u64;
    let max = ctx.server.config.read().proto_max_bulk_len;
    let db = ctx.db();
    let mut shard = db.write(key);
    let len = match shard.entry(key) {
        Lookup::Found(mut entry) => edit(&mut entry, Value::as_str_mut, |s| {
            if value.is_empty() {
                return Ok(Edit::unchanged(s.len()));
            }
            check_length(offset, value.len() as u64, max)?;
            Ok(Edit::changed(overwrite(ctx, s, offset as usize, value)?))
        })?,
        Lookup::Missing(_) if value.is_empty() => 0,
        Lookup::Missing(vacant) => {
            check_length(offset, value.len() as u64, max)?;
            let mut s = Str::Growable(Vec::new());
            let len = overwrite(ctx, &mut s, offset as usize, value)?;
            vacant.insert(Value::Str(s), None);
            len
        }
    };
    if !value.is_empty() {
        ctx.notify(Events::STRING, "setrange", key);
    }
    ctx.w().integer(len as i64);
    Ok(())
}

/// Writes `value` at `offset` in `s`, padding with zero bytes, and returns
/// the new length.
fn overwrite(ctx: &mut Ctx, s: &mut Str, offset: usize, value: &[u8]) -> Result<usize, Error> {
    let end = offset + value.len();
    ctx.reserve(s.growth_to(end))?;
    let bytes = s.grow_to(end);
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(value);
    Ok(bytes.len())
}

//! APPEND key value — append to the string at key (creating it), reply
//! with the new length.

use bytes::Bytes;
use keel_store::{Lookup, Value};

use crate::cmd::context::edit::{edit, Edit};
use crate::cmd::context::strings::check_length;
use crate::cmd::context::{Ctx, Error, Events, Spec, BASE};

/// APPEND.
pub const SPEC: Spec = Spec {
    name: "append",
    complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
    arity: 3,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@fast"],
    group: "string",
    summary: "Append a value to a key",
    since: "2.0.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (key, tail) = (&args[1], &args[2]);
    let max = ctx.server.config.read().proto_max_bulk_len;
    let db = ctx.db();
    let mut shard = db.write(key);
    let len = match shard.entry(key) {
        Lookup::Found(mut entry) => {
            edit(&mut entry, Value::as_str_mut, |s| {
                check_length(s.len() as u64, tail.len() as u64, max)?;
                let len = s.len() + tail.len();
                ctx.reserve(s.growth_to(len))?;
                let bytes = s.grow_to(len);
                bytes.extend_from_slice(tail);
                // Redis signals APPEND even of an empty string.
                Ok(Edit::changed(bytes.len()))
            })?
        }
        Lookup::Missing(vacant) => {
            vacant.insert_str(tail, None);
            tail.len()
        }
    };
    ctx.notify(Events::STRING, "append", key);
    ctx.w().integer(len as i64);
    Ok(())
}

//! BITOP AND | OR | XOR | NOT destkey key [key ...] — a bitwise operation
//! between strings (shorter ones padded with zero bytes), stored at
//! destkey; replies with its length. An empty result deletes destkey.
//!
//! The destination and the sources are locked together, so the result
//! reflects one instant, and its memory is reserved before it is built.

use bytes::Bytes;
use keel_store::bits::{self, BitOp};
use keel_store::size_class::allocated;
use keel_store::{Str, Value};

use crate::cmd::context::{errors, is, Ctx, Error, Events, Spec, BASE};

/// BITOP.
pub const SPEC: Spec = Spec {
    name: "bitop",
    arity: -4,
    flags: &["write", "denyoom"],
    keys: (2, -1, 1),
    acl: &["@write", "@bitmap", "@slow"],
    group: "bitmap",
    summary: "Perform bitwise operations between strings",
    since: "2.6.0",
    complexity: "O(N)",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let op = [
        ("and", BitOp::And),
        ("or", BitOp::Or),
        ("xor", BitOp::Xor),
        ("not", BitOp::Not),
    ]
    .into_iter()
    .find(|(name, _)| is(&args[1], name))
    .map(|(_, op)| op)
    .ok_or(Error::from(errors::SYNTAX))?;
    if op == BitOp::Not && args.len() != 4 {
        return Err("ERR BITOP NOT must be called with a single source key.".into());
    }
    let (destination, keys) = (&args[2], &args[3..]);
    let db = ctx.db();
    let mut locked = db.write_many(&args[2..]);
    let result = {
        let mut sources = Vec::with_capacity(keys.len());
        for key in keys {
            let entry = locked.peek(key);
            ctx.count_lookup(key, entry.is_some());
            match entry.map(|e| e.value().as_str()) {
                None => sources.push(Default::default()),
                Some(Some(s)) => sources.push(s.to_bytes()),
                Some(None) => return Err(errors::WRONGTYPE.into()),
            }
        }
        let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
        ctx.reserve(allocated(len))?;
        let inputs: Vec<&[u8]> = sources.iter().map(|s| &s[..]).collect();
        bits::bitop(op, &inputs)
    };
    let len = result.len();
    let shard = locked.shard(destination);
    let old = if result.is_empty() {
        shard.remove(destination)
    } else {
        shard.insert(destination, Value::Str(Str::Growable(result)), None)
    };
    let deleted = len == 0 && old.is_some();
    if let Some(old) = old {
        crate::lazyfree::free(old);
    }
    drop(locked);
    if len > 0 {
        ctx.notify(Events::STRING, "set", destination);
    } else if deleted {
        ctx.notify(Events::GENERIC, "del", destination);
    }
    ctx.w().integer(len as i64);
    Ok(())
}

//! DEL key [key ...] and UNLINK key [key ...] — remove keys, reply with how
//! many existed. UNLINK frees large values on another thread so the caller
//! does not pay for it; DEL frees in place, as Redis does (with
//! lazyfree-lazy-user-del off).

use bytes::Bytes;

use super::{Ctx, Error, Spec, BASE};

/// DEL.
pub const DEL: Spec = Spec {
    name: "del",
    arity: -2,
    flags: &["write"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@write", "@slow"],
    summary: "Deletes one or more keys.",
    complexity: "O(N) where N is the number of keys that will be removed.",
    run: |ctx, args| remove_keys(ctx, args, false),
    ..BASE
};

/// UNLINK.
pub const UNLINK: Spec = Spec {
    name: "unlink",
    arity: -2,
    flags: &["write", "fast"],
    keys: (1, -1, 1),
    acl: &["@keyspace", "@write", "@fast"],
    summary: "Asynchronously deletes one or more keys.",
    since: "4.0.0",
    complexity: "O(1) for each key removed regardless of its size.",
    run: |ctx, args| remove_keys(ctx, args, true),
    ..BASE
};

fn remove_keys(ctx: &mut Ctx, args: &[Bytes], free_in_background: bool) -> Result<(), Error> {
    let db = ctx.db();
    let mut removed = 0;
    for key in &args[1..] {
        let entry = db.write(key).remove(key);
        if let Some(entry) = entry {
            removed += 1;
            if free_in_background {
                crate::lazyfree::free(entry);
            }
        }
    }
    ctx.w().integer(removed);
    Ok(())
}

//! DUMP key — the value at `key` serialized as Redis 7.0 serializes it
//! (an RDB object with its version and checksum), for RESTORE on keel or
//! on Redis.

use crate::cmd::context::serialized::dump_payload;
use crate::cmd::context::{Spec, BASE};

/// DUMP.
pub const SPEC: Spec = Spec {
    name: "dump",
    arity: 2,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@keyspace", "@read", "@slow"],
    summary: "Return a serialized version of the value stored at the specified key.",
    since: "2.6.0",
    complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis \
                 objects composing the value and M their average size. For small string values the time \
                 complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
    run: |ctx, args| {
        let db = ctx.db();
        let shard = db.read(&args[1]);
        let payload = shard.get(&args[1]).map(|e| dump_payload(ctx, e.value()));
        drop(shard);
        ctx.count_lookup(&args[1], payload.is_some());
        match payload {
            Some(payload) => ctx.w().bulk(&payload),
            None => ctx.w().null(),
        }
        Ok(())
    },
    ..BASE
};

//! OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT key — how a key is stored
//! and used. None of these counts as an access to the key.

use bytes::Bytes;
use keel_store::{Entry, StrRef, ValueRef, SHARED_INTEGERS};

use crate::cmd::context::{Ctx, Error, Spec, BASE, HELP};

/// OBJECT (container).
pub const SPEC: Spec = Spec {
    name: "object",
    arity: -2,
    acl: &["@slow"],
    summary: "A container for object introspection commands",
    since: "2.2.3",
    complexity: "Depends on subcommand.",
    subcommands: &[&ENCODING, &FREQ, &IDLETIME, &REFCOUNT, &OBJECT_HELP],
    ..BASE
};

const SUB: Spec = Spec {
    arity: 3,
    flags: &["readonly"],
    keys: (2, 2, 1),
    acl: &["@keyspace", "@read", "@slow"],
    since: "2.2.3",
    ..BASE
};

const ENCODING: Spec = Spec {
    name: "object|encoding",
    summary: "Inspect the internal encoding of a Redis object",
    run: |ctx, args| {
        with_entry(ctx, args, |ctx, e| {
            ctx.w().bulk(e.value().encoding().as_bytes());
            Ok(())
        })
    },
    ..SUB
};

const FREQ: Spec = Spec {
    name: "object|freq",
    summary: "Get the logarithmic access frequency counter of a Redis object",
    since: "4.0.0",
    run: |ctx, args| {
        with_entry(ctx, args, |ctx, e| {
            let store = &ctx.server.store;
            if !store.access.policy().is_lfu() {
                return Err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please \
                            note that when switching between policies at runtime LRU and LFU data will take some \
                            time to adjust."
                    .into());
            }
            let counter = e.access().decayed_counter(&store.access, store.clock());
            ctx.w().integer(counter as i64);
            Ok(())
        })
    },
    ..SUB
};

const IDLETIME: Spec = Spec {
    name: "object|idletime",
    summary: "Get the time since a Redis object was last accessed",
    run: |ctx, args| {
        with_entry(ctx, args, |ctx, e| {
            let store = &ctx.server.store;
            if store.access.policy().is_lfu() {
                return Err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when \
                            switching between policies at runtime LRU and LFU data will take some time to adjust."
                    .into());
            }
            let idle = e.access().idle_seconds(store.clock());
            ctx.w().integer(idle as i64);
            Ok(())
        })
    },
    ..SUB
};

const REFCOUNT: Spec = Spec {
    name: "object|refcount",
    summary: "Get the number of references to the value of the key",
    run: |ctx, args| {
        with_entry(ctx, args, |ctx, e| {
            // Redis shares the objects of small non-negative integers unless
            // an LRU/LFU policy needs per-key metadata; REFCOUNT shows it.
            let shared = matches!(e.value(), ValueRef::Str(StrRef::Int(n)) if (0..SHARED_INTEGERS).contains(&n))
                && !ctx.server.store.access.policy().tracks_keys();
            ctx.w().integer(if shared { i32::MAX as i64 } else { 1 });
            Ok(())
        })
    },
    ..SUB
};

const OBJECT_HELP: Spec = Spec {
    name: "object|help",
    acl: &["@keyspace", "@slow"],
    since: "6.2.0",
    ..HELP
};

/// Runs `f` on the key's entry (without recording an access), or replies
/// nil when the key does not exist.
fn with_entry(
    ctx: &mut Ctx,
    args: &[Bytes],
    f: impl FnOnce(&mut Ctx, &Entry) -> Result<(), Error>,
) -> Result<(), Error> {
    let db = ctx.db();
    let shard = db.read(&args[2]);
    match shard.peek(&args[2]) {
        Some(entry) => f(ctx, entry),
        None => {
            ctx.w().null();
            Ok(())
        }
    }
}

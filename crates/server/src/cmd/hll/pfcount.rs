//! PFCOUNT key [key ...] — the estimated cardinality of the HyperLogLog
//! at key, or of the union of several (merged into a temporary, the keys
//! untouched). A missing key counts as an empty HLL.
//!
//! With one key the estimate is cached in the HLL's header: PFCOUNT
//! rewrites the header when the cache is stale, so, as in Redis, a
//! "read-only" PFCOUNT can change the stored bytes (and touch WATCHers).

use bytes::Bytes;
use keel_store::hll;
use keel_store::{Lookup, Value};

use crate::cmd::context::edit::{edit, Edit};
use crate::cmd::context::hll::{bytes_of, invalid, NOT_HLL};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// PFCOUNT.
pub const SPEC: Spec = Spec {
    name: "pfcount",
    arity: -2,
    flags: &["readonly"],
    keys: (1, -1, 1),
    acl: &["@read", "@hyperloglog", "@slow"],
    group: "hyperloglog",
    summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
    since: "2.8.9",
    complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let count = match &args[1..] {
        [key] => count_one(ctx, key)?,
        keys => count_union(ctx, keys)?,
    };
    // Redis replies with the unsigned estimate as a signed integer.
    ctx.w().integer(count as i64);
    Ok(())
}

/// The estimate of one HLL: its cache, or a fresh count written back.
fn count_one(ctx: &mut Ctx, key: &[u8]) -> Result<u64, Error> {
    let db = ctx.db();
    let mut shard = db.write(key);
    let Lookup::Found(mut entry) = shard.entry(key) else {
        ctx.count_lookup(key, false);
        return Ok(0);
    };
    ctx.count_lookup(key, true);
    let (bytes, _) = bytes_of(entry.entry().value())?;
    if let Some(cached) = hll::cached_count(&bytes) {
        return Ok(cached);
    }
    edit(&mut entry, Value::as_str_mut, |s| {
        let bytes = hll::bytes_mut(s).ok_or(NOT_HLL)?;
        let count = hll::count(bytes).map_err(invalid)?;
        hll::set_cached_count(bytes, count);
        Ok(Edit::changed(count))
    })
}

/// The estimate of the union of several HLLs.
fn count_union(ctx: &mut Ctx, keys: &[Bytes]) -> Result<u64, Error> {
    let db = ctx.db();
    let shards = db.read_many(keys);
    let mut max = Box::new([0u8; hll::REGISTERS]);
    for key in keys {
        let entry = shards.get(key);
        ctx.count_lookup(key, entry.is_some());
        if let Some(entry) = entry {
            let (bytes, _) = bytes_of(entry.value())?;
            hll::merge_into(&mut max, &bytes).map_err(invalid)?;
        }
    }
    Ok(hll::count_registers(&max))
}

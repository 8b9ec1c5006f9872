//! SWAPDB index1 index2 — swaps two databases' contents at once
//! (`keel_store::Store::swap_dbs`).
//!
//! As in Redis, what is tied to a database index stays with it: clients
//! that selected it see the other contents, clients watching a key there
//! find their transaction failed if the key exists in either database, and
//! clients blocked on a key there are served if the key now holds what
//! they wait for.

use bytes::Bytes;

use crate::cmd::context::{parse_i64, Ctx, Error, Spec, BASE};

/// SWAPDB.
pub const SPEC: Spec = Spec {
    name: "swapdb",
    arity: 3,
    flags: &["write", "fast"],
    acl: &["@keyspace", "@write", "@fast", "@dangerous"],
    group: "server",
    summary: "Swaps two Redis databases",
    since: "4.0.0",
    complexity:
        "O(N) where N is the count of clients watching or blocking on keys from both databases.",
    run,
    ..BASE
};

/// A database index argument, an `i32`; `invalid` otherwise.
fn index(arg: &[u8], invalid: &'static str) -> Result<i32, Error> {
    parse_i64(arg)
        .ok()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or(invalid.into())
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    // A cluster node has database 0 only.
    if ctx.server.cluster.is_some() {
        return Err("ERR SWAPDB is not allowed in cluster mode".into());
    }
    let first = index(&args[1], "ERR invalid first DB index")?;
    let second = index(&args[2], "ERR invalid second DB index")?;
    let databases = ctx.server.store.databases();
    let database = |i: i32| usize::try_from(i).ok().filter(|&i| i < databases);
    let (Some(first), Some(second)) = (database(first), database(second)) else {
        return Err("ERR DB index is out of range".into());
    };
    ctx.server.store.swap_dbs(first, second, ctx.now_ms);
    let blocking = &ctx.server.blocking;
    ctx.client.ready.extend(blocking.waited_keys(first));
    if second != first {
        ctx.client.ready.extend(blocking.waited_keys(second));
    }
    ctx.w().ok();
    Ok(())
}

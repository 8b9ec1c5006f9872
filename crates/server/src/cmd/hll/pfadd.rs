//! PFADD key [element ...] — add elements to the HyperLogLog at key,
//! creating it; reply 1 if its estimate may have changed (a register grew,
//! or the key was created), else 0.

use bytes::Bytes;
use keel_store::hll::{self, Corrupt};
use keel_store::{Lookup, Str, Value};

use crate::cmd::context::edit::{edit, Edit};
use crate::cmd::context::hll::{bytes_of, invalid, new_value, replace};
use crate::cmd::context::{Ctx, Error, Events, Spec, BASE};

/// PFADD.
pub const SPEC: Spec = Spec {
    name: "pfadd",
    arity: -2,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@hyperloglog", "@fast"],
    group: "hyperloglog",
    summary: "Adds the specified elements to the specified HyperLogLog.",
    since: "2.8.9",
    complexity: "O(1) to add every element.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (key, elements) = (&args[1], &args[2..]);
    let sparse_max_bytes = ctx.server.config.read().hll_sparse_max_bytes;
    let db = ctx.db();
    let mut shard = db.write(key);
    let updated = match shard.entry(key) {
        Lookup::Found(mut entry) => {
            bytes_of(entry.entry().value())?;
            edit(&mut entry, Value::as_str_mut, |s| {
                add_all(ctx, s, elements, sparse_max_bytes)
            })??
        }
        Lookup::Missing(vacant) => {
            let mut created = hll::new();
            let (_, outcome) = add_each(&mut created, elements, sparse_max_bytes);
            outcome.map_err(invalid)?;
            hll::invalidate_cache(&mut created);
            vacant.insert(new_value(ctx, created)?, None);
            true
        }
    };
    if updated {
        ctx.notify(Events::STRING, "pfadd", key);
    }
    ctx.w().integer(updated as i64);
    Ok(())
}

/// Adds `elements` to the stored HLL `s`: a dense one in place (it never
/// grows), a sparse one on a copy stored once every element is in. As in
/// Redis, the elements before one that finds the sparse body corrupt stay
/// added, and the key is not signalled as modified.
fn add_all(
    ctx: &mut Ctx,
    s: &mut Str,
    elements: &[Bytes],
    sparse_max_bytes: usize,
) -> Result<Edit<Result<bool, Error>>, Error> {
    if let Str::Growable(dense) = s {
        if hll::encoding_of(dense) == Ok(hll::Encoding::Dense) {
            let (updated, outcome) = add_each(dense, elements, sparse_max_bytes);
            outcome.map_err(invalid)?;
            if updated {
                hll::invalidate_cache(dense);
            }
            return Ok(Edit::changed_if(updated, Ok(updated)));
        }
    }
    let mut copy = s.to_bytes().into_owned();
    let (updated, outcome) = add_each(&mut copy, elements, sparse_max_bytes);
    if updated {
        hll::invalidate_cache(&mut copy);
        replace(ctx, s, copy)?;
    }
    Ok(match outcome {
        Ok(()) => Edit::changed_if(updated, Ok(updated)),
        Err(corrupt) => Edit::unchanged(Err(invalid(corrupt))),
    })
}

/// Adds each element, stopping at a corrupt body: whether any register
/// grew, and whether every element went in.
fn add_each(
    hll: &mut Vec<u8>,
    elements: &[Bytes],
    sparse_max_bytes: usize,
) -> (bool, Result<(), Corrupt>) {
    let mut updated = false;
    for element in elements {
        match hll::add(hll, element, sparse_max_bytes) {
            Ok(grew) => updated |= grew,
            Err(corrupt) => return (updated, Err(corrupt)),
        }
    }
    (updated, Ok(()))
}

//! PFMERGE destkey [sourcekey ...] — store at destkey the union of the
//! HyperLogLogs at destkey and the source keys. The destination turns
//! dense if any input is dense, else stays sparse while it fits.

use bytes::Bytes;
use keel_store::hll;
use keel_store::{Lookup, Value};

use crate::cmd::context::edit::{edit, Edit};
use crate::cmd::context::hll::{bytes_of, invalid, new_value, replace};
use crate::cmd::context::{Ctx, Error, Events, Spec, BASE};

/// PFMERGE.
pub const SPEC: Spec = Spec {
    name: "pfmerge",
    arity: -2,
    flags: &["write", "denyoom"],
    keys: (1, -1, 1),
    acl: &["@write", "@hyperloglog", "@slow"],
    group: "hyperloglog",
    summary: "Merge N different HyperLogLogs into a single one.",
    since: "2.8.9",
    complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (destination, keys) = (&args[1], &args[1..]);
    let sparse_max_bytes = ctx.server.config.read().hll_sparse_max_bytes;
    let db = ctx.db();
    let mut locked = db.write_many(keys);
    // Every input, the destination included, is checked and merged first.
    let mut max = Box::new([0u8; hll::REGISTERS]);
    let mut use_dense = false;
    for key in keys {
        let entry = locked.peek(key);
        ctx.count_lookup(key, entry.is_some());
        if let Some(entry) = entry {
            let (bytes, encoding) = bytes_of(entry.value())?;
            use_dense |= encoding == hll::Encoding::Dense;
            hll::merge_into(&mut max, &bytes).map_err(invalid)?;
        }
    }
    let raise = |hll: &mut Vec<u8>| -> Result<(), Error> {
        if use_dense {
            hll::to_dense(hll).map_err(invalid)?;
        }
        for (index, &value) in max.iter().enumerate().filter(|(_, &v)| v > 0) {
            hll::set_register(hll, index, value, sparse_max_bytes).map_err(invalid)?;
        }
        hll::invalidate_cache(hll);
        Ok(())
    };
    match locked.shard(destination).entry(destination) {
        Lookup::Found(mut entry) => edit(&mut entry, Value::as_str_mut, |s| {
            let mut merged = s.to_bytes().into_owned();
            raise(&mut merged)?;
            replace(ctx, s, merged)?;
            Ok(Edit::changed(()))
        })?,
        Lookup::Missing(vacant) => {
            let mut merged = hll::new();
            raise(&mut merged)?;
            vacant.insert(new_value(ctx, merged)?, None);
        }
    }
    ctx.notify(Events::STRING, "pfadd", destination);
    ctx.w().ok();
    Ok(())
}

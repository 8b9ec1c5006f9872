//! MEMORY USAGE key [SAMPLES count] — bytes a key accounts for: its key and
//! value, its slot in the shard and its share of the index. keel counts
//! every value exactly, so SAMPLES is accepted and has nothing to sample.

use bytes::Bytes;
use keel_store::Shard;

use super::{errors, is, parse_i64, Ctx, Error, Spec, BASE, HELP};

/// MEMORY (container).
pub const SPEC: Spec = Spec {
    name: "memory",
    arity: -2,
    acl: &["@slow"],
    summary: "A container for memory diagnostics commands.",
    since: "4.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[&USAGE, &MEMORY_HELP],
    ..BASE
};

const USAGE: Spec = Spec {
    name: "memory|usage",
    arity: -3,
    flags: &["readonly"],
    keys: (2, 2, 1),
    acl: &["@read", "@slow"],
    summary: "Estimates the memory usage of a key.",
    since: "4.0.0",
    complexity: "O(N) where N is the number of samples.",
    run: usage,
    ..BASE
};

const MEMORY_HELP: Spec = Spec {
    name: "memory|help",
    since: "4.0.0",
    ..HELP
};

fn usage(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    match &args[3..] {
        [] => {}
        [opt, n] if is(opt, "samples") => {
            parse_i64(n)?;
        }
        _ => return Err(errors::SYNTAX.into()),
    }
    let db = ctx.db();
    let shard = db.read(&args[2]);
    match shard.peek(&args[2]) {
        Some(entry) => ctx.w().integer(Shard::entry_bytes(entry) as i64),
        None => ctx.w().null(),
    }
    Ok(())
}

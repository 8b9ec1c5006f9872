//! PFDEBUG subcommand key — Redis's HyperLogLog debugging: GETREG (every
//! register, turning the HLL dense), DECODE (a sparse HLL's opcodes),
//! ENCODING and TODENSE. PFSELFTEST — Redis's self test of the register
//! arithmetic and the estimator.
//!
//! In Redis 7.0.15 neither is gated by `enable-debug-command`: they are
//! `admin` commands (ACL `@admin @dangerous`), and so are they here.

use bytes::Bytes;
use keel_store::hll;
use keel_store::{EntryMut, Lookup, Value};

use crate::cmd::context::edit::{edit, Edit};
use crate::cmd::context::hll::{bytes_of, invalid, replace};
use crate::cmd::context::{is, Ctx, Error, Spec, BASE};

/// PFDEBUG.
pub const PFDEBUG: Spec = Spec {
    name: "pfdebug",
    arity: 3,
    flags: &["write", "denyoom", "admin"],
    keys: (2, 2, 1),
    acl: &["@write", "@hyperloglog", "@admin", "@slow", "@dangerous"],
    group: "hyperloglog",
    summary: "Internal commands for debugging HyperLogLog values",
    since: "2.8.9",
    complexity: "N/A",
    run: pfdebug,
    ..BASE
};

/// PFSELFTEST.
pub const PFSELFTEST: Spec = Spec {
    name: "pfselftest",
    arity: 1,
    flags: &["admin"],
    acl: &["@hyperloglog", "@admin", "@slow", "@dangerous"],
    group: "hyperloglog",
    summary: "An internal command for testing HyperLogLog values",
    since: "2.8.9",
    complexity: "N/A",
    run: pfselftest,
    ..BASE
};

fn pfdebug(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (subcommand, key) = (&args[1], &args[2]);
    let db = ctx.db();
    let mut shard = db.write(key);
    let Lookup::Found(mut entry) = shard.entry(key) else {
        return Err("ERR The specified key does not exist".into());
    };
    let encoding = bytes_of(entry.entry().value())?.1;
    if is(subcommand, "getreg") {
        to_dense(ctx, &mut entry)?;
        let (bytes, _) = bytes_of(entry.entry().value())?;
        let registers = hll::registers(&bytes).map_err(invalid)?;
        let mut w = ctx.w();
        w.array(registers.len());
        registers.iter().for_each(|&r| w.integer(r as i64));
    } else if is(subcommand, "decode") {
        let (bytes, _) = bytes_of(entry.entry().value())?;
        let decoded = hll::decode_sparse(&bytes).ok_or("ERR HLL encoding is not sparse")?;
        ctx.w().bulk(decoded.as_bytes());
    } else if is(subcommand, "encoding") {
        ctx.w().simple(encoding.name());
    } else if is(subcommand, "todense") {
        let converted = to_dense(ctx, &mut entry)?;
        ctx.w().integer(converted as i64);
    } else {
        return Err(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(subcommand)
        )
        .into());
    }
    Ok(())
}

/// Turns the HLL in `entry` dense: true if it was sparse.
fn to_dense(ctx: &mut Ctx, entry: &mut EntryMut) -> Result<bool, Error> {
    edit(entry, Value::as_str_mut, |s| {
        let mut dense = s.to_bytes().into_owned();
        if !hll::to_dense(&mut dense).map_err(invalid)? {
            return Ok(Edit::unchanged(false));
        }
        replace(ctx, s, dense)?;
        Ok(Edit::changed(true))
    })
}

fn pfselftest(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let sparse_max_bytes = ctx.server.config.read().hll_sparse_max_bytes;
    let mut rng = rand::thread_rng();
    hll::self_test(|| rand::Rng::gen(&mut rng), sparse_max_bytes)
        .map_err(|failure| format!("ERR {failure}"))?;
    ctx.w().ok();
    Ok(())
}

//! WAIT numreplicas timeout — blocks until the writes sent so far reach
//! `numreplicas` replicas, and replies how many did. keel has no replicas
//! (yet), so no write ever reaches one: it replies 0 at once, where Redis
//! would wait out the timeout for an answer that is 0 all the same. The
//! arguments are checked as Redis checks them.

use bytes::Bytes;

use crate::cmd::context::{parse_i64, Ctx, Error, Spec, BASE};

/// WAIT.
pub const SPEC: Spec = Spec {
    name: "wait",
    arity: 3,
    flags: &["noscript"],
    acl: &["@slow", "@connection"],
    group: "generic",
    summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
    since: "3.0.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    parse_i64(&args[1])?;
    let timeout = parse_i64(&args[2])
        .map_err(|_| Error::from("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err("ERR timeout is negative".into());
    }
    ctx.w().integer(0);
    Ok(())
}

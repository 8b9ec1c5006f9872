//! HRANDFIELD key [count [WITHVALUES]] — random fields, distinct for a
//! positive count, possibly repeated for a negative one.

use bytes::Bytes;
use keel_resp::Protocol;
use keel_store::Hash;

use crate::cmd::context::collection::read;
use crate::cmd::context::{errors, is, write_each, Ctx, Error, Spec, BASE};

/// HRANDFIELD.
pub const SPEC: Spec = Spec {
    name: "hrandfield",
    arity: -2,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@hash", "@slow"],
    group: "hash",
    summary: "Get one or multiple random fields from a hash",
    since: "6.2.0",
    complexity: "O(N) where N is the number of fields returned",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if args.len() == 2 {
        return read(ctx, &args[1], |ctx, hash: Option<&Hash>| {
            match hash.and_then(|h| h.random(&mut rand::thread_rng())) {
                Some((field, _)) => ctx.w().bulk(field),
                None => ctx.w().null(),
            }
            Ok(())
        });
    }
    let count = crate::cmd::context::random::parse_count(&args[2])?;
    let with_values = match args.len() {
        3 => false,
        4 if is(&args[3], "withvalues") => true,
        _ => return Err(errors::SYNTAX.into()),
    };
    if with_values && count < -(i64::MAX / 2) {
        return Err("ERR value is out of range".into());
    }
    read(ctx, &args[1], |ctx, hash: Option<&Hash>| {
        let mut w = ctx.w();
        let Some(hash) = hash else {
            w.array(0);
            return Ok(());
        };
        let (n, picks) = crate::cmd::context::random::pick(count, hash.len(), hash.iter(), |rng| {
            hash.random(rng).expect("hash is not empty")
        });
        let resp3 = w.protocol() == Protocol::Resp3;
        w.array(if with_values && !resp3 { 2 * n } else { n });
        write_each(&mut w, picks, |w, (field, value)| {
            if with_values && resp3 {
                w.array(2);
            }
            w.bulk(field);
            if with_values {
                w.bulk(value);
            }
        });
        Ok(())
    })
}

//! SPOP key [count] — removes and returns random members; the key goes
//! with the last one.

use bytes::Bytes;
use keel_store::Set;

use crate::cmd::context::collection::{update, Edit, Missing};
use crate::cmd::context::{errors, journal, parse_i64, Ctx, Error, Spec, BASE};

/// SPOP.
pub const SPEC: Spec = Spec {
    name: "spop",
    arity: -2,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@set", "@fast"],
    group: "set",
    summary: "Remove and return one or multiple random members from a set",
    complexity:
        "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let count = match args.len() {
        2 => None,
        3 => match parse_i64(&args[2]) {
            Ok(n) if n >= 0 => Some(n as u64),
            _ => return Err("ERR value is out of range, must be positive".into()),
        },
        _ => return Err(errors::SYNTAX.into()),
    };
    let mut rng = rand::thread_rng();
    let popped = update(ctx, &args[1], Missing::Skip, "spop", |set: &mut Set| {
        let n = count.unwrap_or(1).min(set.len() as u64);
        let popped: Vec<_> = (0..n).filter_map(|_| set.pop_random(&mut rng)).collect();
        // Replicas remove the members picked here, not ones of their own.
        let mut srem = vec![Bytes::from_static(b"SREM"), args[1].clone()];
        srem.extend(popped.iter().map(|m| Bytes::copy_from_slice(m)));
        journal::propagate_as(srem);
        Ok(Edit::changed_if(!popped.is_empty(), popped))
    })?
    .unwrap_or_default();
    let mut w = ctx.w();
    match count {
        None => match popped.first() {
            Some(member) => w.bulk(member),
            None => w.null(),
        },
        Some(_) => {
            w.set(popped.len());
            popped.iter().for_each(|m| w.bulk(m));
        }
    }
    Ok(())
}

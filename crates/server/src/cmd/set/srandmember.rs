//! SRANDMEMBER key [count] — random members, with the count rules
//! HRANDFIELD and ZRANDMEMBER share (see `context::random`).

use bytes::Bytes;
use keel_store::Set;

use crate::cmd::context::collection::read;
use crate::cmd::context::random::{parse_count, pick};
use crate::cmd::context::{errors, write_each, Ctx, Error, Spec, BASE};

/// SRANDMEMBER.
pub const SPEC: Spec = Spec {
    name: "srandmember",
    arity: -2,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@set", "@slow"],
    group: "set",
    summary: "Get one or multiple random members from a set",
    complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    match args.len() {
        2 => read(ctx, &args[1], |ctx, set: Option<&Set>| {
            match set.and_then(|s| s.random(&mut rand::thread_rng())) {
                Some(member) => ctx.w().bulk(&member),
                None => ctx.w().null(),
            }
            Ok(())
        }),
        3 => {
            let count = parse_count(&args[2])?;
            read(ctx, &args[1], |ctx, set: Option<&Set>| {
                let mut w = ctx.w();
                let Some(set) = set else {
                    w.array(0);
                    return Ok(());
                };
                let (n, picks) = pick(count, set.len(), set.iter(), |rng| {
                    set.random(rng).expect("set is not empty")
                });
                w.array(n);
                write_each(&mut w, picks, |w, member| w.bulk(&member));
                Ok(())
            })
        }
        _ => Err(errors::SYNTAX.into()),
    }
}

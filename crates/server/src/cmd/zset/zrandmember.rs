//! ZRANDMEMBER key [count [WITHSCORES]] — random members, distinct for a
//! positive count, possibly repeated for a negative one (the picking is
//! SRANDMEMBER's, see `context::random::pick`).

use std::borrow::Cow;

use bytes::Bytes;
use keel_resp::Protocol;
use keel_store::ZSet;
use rand::Rng;

use crate::cmd::context::collection::read;
use crate::cmd::context::{errors, is, write_each, Ctx, Error, Spec, BASE};

/// ZRANDMEMBER.
pub const SPEC: Spec = Spec {
    name: "zrandmember",
    arity: -2,
    flags: &["readonly"],
    keys: (1, 1, 1),
    acl: &["@read", "@sortedset", "@slow"],
    group: "sorted-set",
    summary: "Get one or multiple random elements from a sorted set",
    since: "6.2.0",
    complexity: "O(N) where N is the number of elements returned",
    run,
    ..BASE
};

/// A member at a uniformly chosen rank: O(log n) in a large set.
fn random<'z>(z: &'z ZSet, rng: &mut impl Rng) -> (Cow<'z, [u8]>, f64) {
    let at = rng.gen_range(0..z.len());
    z.range(at, at + 1).next().expect("rank is in range")
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if args.len() == 2 {
        return read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
            match zset.map(|z| random(z, &mut rand::thread_rng())) {
                Some((member, _)) => ctx.w().bulk(&member),
                None => ctx.w().null(),
            }
            Ok(())
        });
    }
    let count = crate::cmd::context::random::parse_count(&args[2])?;
    let with_scores = match args.len() {
        3 => false,
        4 if is(&args[3], "withscores") => true,
        _ => return Err(errors::SYNTAX.into()),
    };
    if with_scores && count < -(i64::MAX / 2) {
        return Err("ERR value is out of range".into());
    }
    read(ctx, &args[1], |ctx, zset: Option<&ZSet>| {
        let mut w = ctx.w();
        let Some(zset) = zset else {
            w.array(0);
            return Ok(());
        };
        let all = zset.range(0, zset.len());
        let (n, picks) =
            crate::cmd::context::random::pick(count, zset.len(), all, |rng| random(zset, rng));
        let pairs = with_scores && w.protocol() == Protocol::Resp3;
        w.array(if with_scores && !pairs { 2 * n } else { n });
        write_each(&mut w, picks, |w, (member, score)| {
            if pairs {
                w.array(2);
            }
            w.bulk(&member);
            if with_scores {
                w.double(score);
            }
        });
        Ok(())
    })
}

//! SRANDMEMBER key [count] — random members; and the count rules that
//! HRANDFIELD shares: a positive count picks distinct elements (all of them
//! when the count reaches the size), a negative one picks with repetition.

use bytes::Bytes;
use keel_store::Set;
use rand::rngs::ThreadRng;

use super::collection::read;
use super::{errors, parse_i64, Ctx, Error, Spec, BASE};

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

/// Parses a random-pick count, refusing `i64::MIN` as Redis does (its
/// absolute value does not fit).
pub fn parse_count(arg: &[u8]) -> Result<i64, Error> {
    match parse_i64(arg)? {
        i64::MIN => Err(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
                .into(),
        ),
        n => Ok(n),
    }
}

/// Picks `count` elements of a collection of `len` elements as the
/// random-pick commands do: `all` lists every element, `random` draws one.
pub fn pick<T>(
    count: i64,
    len: usize,
    all: impl Iterator<Item = T>,
    mut random: impl FnMut(&mut ThreadRng) -> T,
) -> Vec<T> {
    let mut rng = rand::thread_rng();
    if count < 0 {
        return (0..count.unsigned_abs())
            .map(|_| random(&mut rng))
            .collect();
    }
    let mut every: Vec<T> = all.collect();
    if count as usize >= len {
        return every;
    }
    let chosen = rand::seq::index::sample(&mut rng, len, count as usize).into_vec();
    let mut keep = vec![false; len];
    chosen.iter().for_each(|&i| keep[i] = true);
    let mut i = 0;
    every.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    every
}

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
                let picks = match set {
                    None => Vec::new(),
                    Some(s) => pick(count, s.len(), s.iter(), |rng| {
                        s.random(rng).expect("set is not empty")
                    }),
                };
                let mut w = ctx.w();
                w.array(picks.len());
                picks.iter().for_each(|m| w.bulk(m));
                Ok(())
            })
        }
        _ => Err(errors::SYNTAX.into()),
    }
}

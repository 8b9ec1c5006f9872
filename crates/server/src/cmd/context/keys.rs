//! Key finders several commands share, for [`Spec::getkeys`]: the keys of
//! a command that counts them (ZUNION, LMPOP, SINTERCARD, ...) and of one
//! whose key positions name no key (shard channels). Finders only one
//! command needs live in that command's file.

use bytes::Bytes;

use super::{parse_i64, Spec};

/// The keys at the spec's key positions, then the `numkeys` keys counted
/// by the argument at `AT`, as Redis's `genericGetKeys` finds them. `None`
/// when the count is not a positive number within the arguments.
pub fn counted<'a, const AT: usize>(spec: &Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    let count = parse_i64(args.get(AT)?).ok()?;
    let count = usize::try_from(count).ok().filter(|&n| n > 0)?;
    let mut keys: Vec<&Bytes> = spec.key_args(args).collect();
    keys.extend(args.get(AT + 1..)?.get(..count)?);
    Some(keys)
}

/// The keys at the spec's key positions, for a command flagged
/// `movablekeys` whose keys are nonetheless all there (SORT_RO: the keys
/// its BY and GET patterns name are not counted, as in Redis).
pub fn positional<'a>(spec: &Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    Some(spec.key_args(args).collect())
}

/// No keys: shard channels have key positions, as COMMAND INFO reports
/// them, but are not keys (Redis marks their key specs `not_key`).
pub fn none<'a>(_: &Spec, _: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    Some(Vec::new())
}

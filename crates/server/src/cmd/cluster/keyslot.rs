//! CLUSTER KEYSLOT | COUNTKEYSINSLOT | GETKEYSINSLOT — the slot of a key,
//! and the keys this node holds in a slot (from the store's per-slot
//! counts: only shards holding keys of the slot are walked).

use bytes::Bytes;

use super::READ;
use crate::cmd::context::cluster::{cluster, key_slot, SLOTS};
use crate::cmd::context::{parse_i64, Ctx, Error, Spec};

pub const KEYSLOT: Spec = Spec {
    name: "cluster|keyslot",
    arity: 3,
    summary: "Returns the hash slot of the specified key",
    complexity: "O(N) where N is the number of bytes in the key",
    run: |ctx, args| {
        cluster(ctx)?;
        ctx.w().integer(key_slot(&args[2]).into());
        Ok(())
    },
    ..READ
};

pub const COUNTKEYSINSLOT: Spec = Spec {
    name: "cluster|countkeysinslot",
    arity: 3,
    summary: "Return the number of local keys in the specified hash slot",
    run: count_keys_in_slot,
    ..READ
};

pub const GETKEYSINSLOT: Spec = Spec {
    name: "cluster|getkeysinslot",
    arity: 4,
    summary: "Return local key names in the specified hash slot",
    complexity: "O(log(N)) where N is the number of requested keys",
    run: get_keys_in_slot,
    ..READ
};

fn count_keys_in_slot(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    cluster(ctx)?;
    let slot = parse_i64(&args[2])?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err("ERR Invalid slot".into());
    }
    let count = ctx.db().keys_in_slot(slot as u16);
    ctx.w().integer(count as i64);
    Ok(())
}

fn get_keys_in_slot(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    cluster(ctx)?;
    let (slot, max) = (parse_i64(&args[2])?, parse_i64(&args[3])?);
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return Err("ERR Invalid slot or number of keys".into());
    }
    let keys = ctx.db().keys_of_slot(slot as u16, max as usize);
    let mut w = ctx.w();
    w.array(keys.len());
    for key in keys {
        w.bulk(&key);
    }
    Ok(())
}

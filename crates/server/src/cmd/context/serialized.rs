//! Values between the keyspace and [`keel_rdb`]'s plain values: the DUMP
//! payload of a stored value, and the value a RESTORE payload rebuilds in
//! the encodings this server's thresholds choose. DUMP, RESTORE and
//! MIGRATE share it.

use keel_rdb::PayloadError;
use keel_store::{Value, ValueRef};

use crate::persistence::values::{plain, stored, thresholds};

use super::{Ctx, Error};

/// The DUMP payload of `value`, laid out as Redis 7.0 would with the
/// server's thresholds.
pub fn dump_payload(ctx: &Ctx, value: ValueRef<'_>) -> Vec<u8> {
    keel_rdb::dump(&plain(value), &thresholds(&super::collection::limits(ctx)))
}

/// The value a DUMP payload holds, with Redis's errors for a payload it
/// refuses. Decoding may allocate no more than `maxmemory` leaves: a
/// payload of a few hundred KB can claim gigabytes (compressed strings,
/// packed encodings of tiny entries), and that is refused with OOM before
/// it is allocated.
pub fn restore_payload(ctx: &Ctx, payload: &[u8]) -> Result<Value, Error> {
    let budget = ctx.server.room_left().map_or(usize::MAX, |left| {
        usize::try_from(left).unwrap_or(usize::MAX)
    });
    match keel_rdb::restore_within(payload, budget) {
        Ok(plain) => Ok(stored(plain, &super::collection::limits(ctx))),
        Err(PayloadError::VersionOrChecksum) => {
            Err("ERR DUMP payload version or checksum are wrong".into())
        }
        Err(PayloadError::BadData) => Err("ERR Bad data format".into()),
        Err(PayloadError::OverBudget) => Err(super::errors::OOM.into()),
    }
}

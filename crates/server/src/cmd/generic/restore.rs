//! RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
//! [FREQ frequency] — creates `key` from a DUMP payload (of keel or of
//! Redis), with a TTL in milliseconds (0 for none; a Unix time in ms with
//! ABSTTL) and, for the eviction policy in force, the idle time or access
//! frequency it had. RESTORE-ASKING, which a Redis cluster node's MIGRATE
//! sends, is the same command here: keel has no cluster slots to ask about.
//!
//! The payload is decoded before the key's shard is locked, so a large
//! one does not hold up the shard's other keys; the replies keep Redis's
//! order all the same (options, then BUSYKEY, then the TTL, then the
//! payload).

use bytes::Bytes;

use crate::cmd::context::serialized::restore_payload;
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Events, Spec, BASE};

/// RESTORE.
pub const RESTORE: Spec = Spec {
    name: "restore",
    arity: -4,
    flags: &["write", "denyoom"],
    keys: (1, 1, 1),
    acl: &["@keyspace", "@write", "@slow", "@dangerous"],
    summary: "Create a key using the provided serialized value, previously obtained using DUMP.",
    since: "2.6.0",
    complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N \
                 is the number of Redis objects composing the value and M their average size. For small string \
                 values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for \
                 sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is \
                 O(log(N)).",
    run,
    ..BASE
};

/// RESTORE-ASKING.
pub const RESTORE_ASKING: Spec = Spec {
    name: "restore-asking",
    flags: &["write", "denyoom", "asking"],
    group: "server",
    summary: "An internal command for migrating keys in a cluster",
    since: "3.0.0",
    ..RESTORE
};

/// RESTORE's options.
#[derive(Default)]
struct Options {
    replace: bool,
    absolute_ttl: bool,
    idle_seconds: Option<u64>,
    frequency: Option<u8>,
}

fn parse_options(args: &[Bytes]) -> Result<Options, Error> {
    let mut options = Options::default();
    let mut j = 4;
    while j < args.len() {
        let has_value = j + 1 < args.len();
        if is(&args[j], "replace") {
            options.replace = true;
        } else if is(&args[j], "absttl") {
            options.absolute_ttl = true;
        } else if is(&args[j], "idletime") && has_value && options.frequency.is_none() {
            let idle = parse_i64(&args[j + 1])?;
            let idle = u64::try_from(idle)
                .map_err(|_| Error::from("ERR Invalid IDLETIME value, must be >= 0"))?;
            options.idle_seconds = Some(idle);
            j += 1;
        } else if is(&args[j], "freq") && has_value && options.idle_seconds.is_none() {
            let frequency = parse_i64(&args[j + 1])?;
            let frequency = u8::try_from(frequency)
                .map_err(|_| Error::from("ERR Invalid FREQ value, must be >= 0 and <= 255"))?;
            options.frequency = Some(frequency);
            j += 1;
        } else {
            return Err(errors::SYNTAX.into());
        }
        j += 1;
    }
    Ok(options)
}

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let key = &args[1];
    let options = parse_options(args)?;
    // The TTL, then the value, each with its error kept for its turn.
    let decoded = parse_i64(&args[2])
        .and_then(|ttl| match ttl {
            ..=-1 => Err(Error::from("ERR Invalid TTL value, must be >= 0")),
            ttl => Ok(ttl),
        })
        .map(|ttl| (ttl, restore_payload(ctx, &args[3])));
    let db = ctx.db();
    let mut shard = db.write(key);
    if !options.replace && shard.peek(key).is_some() {
        return Err("BUSYKEY Target key name already exists.".into());
    }
    let (ttl, value) = decoded?;
    let value = value?;
    let deadline = match (ttl, options.absolute_ttl) {
        (0, _) => None,
        (at, true) => Some(at),
        (ttl, false) => Some(ttl.saturating_add(ctx.now_ms as i64)),
    };
    if deadline.is_some_and(|at| at <= ctx.now_ms as i64) {
        // Already expired: the key is not created, but REPLACE still
        // deletes the one it would have replaced.
        if options.replace {
            if let Some(old) = shard.remove(key) {
                crate::lazyfree::free(old);
                ctx.notify(Events::GENERIC, "del", key);
            }
        }
        ctx.w().ok();
        return Ok(());
    }
    // Dispatch reserved the arguments; the value may take more than its
    // payload (a compressed string, small elements each of their own).
    ctx.reserve(value.heap_bytes().saturating_sub(args[3].len()))?;
    // As Redis, a replaced key is deleted and then created (a `new` key
    // event).
    if let Some(old) = shard.remove(key) {
        crate::lazyfree::free(old);
    }
    let deadline = deadline.map(|at| at as u64);
    shard.insert_restored(
        key,
        value,
        deadline,
        options.idle_seconds,
        options.frequency,
    );
    drop(shard);
    ctx.notify(Events::GENERIC, "restore", key);
    ctx.w().ok();
    Ok(())
}

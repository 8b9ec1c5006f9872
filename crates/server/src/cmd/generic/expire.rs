//! EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX|XX|GT|LT] — set a
//! key's deadline; a deadline already past deletes the key.

use bytes::Bytes;
use keel_store::Shard;

use crate::cmd::context::{deadline_ms, is, Ctx, Error, Events, Spec, Unit, BASE};

const fn spec(
    name: &'static str,
    summary: &'static str,
    since: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -3,
        flags: &["write", "fast"],
        keys: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        summary,
        since,
        run,
        ..BASE
    }
}

/// EXPIRE.
pub const EXPIRE: Spec = spec(
    "expire",
    "Set a key's time to live in seconds",
    "1.0.0",
    |ctx, args| expire(ctx, args, Unit::Seconds, true, "expire"),
);
/// PEXPIRE.
pub const PEXPIRE: Spec = spec(
    "pexpire",
    "Set a key's time to live in milliseconds",
    "2.6.0",
    |ctx, args| expire(ctx, args, Unit::Milliseconds, true, "pexpire"),
);
/// EXPIREAT.
pub const EXPIREAT: Spec = spec(
    "expireat",
    "Set the expiration for a key as a UNIX timestamp",
    "1.2.0",
    |ctx, args| expire(ctx, args, Unit::Seconds, false, "expireat"),
);
/// PEXPIREAT.
pub const PEXPIREAT: Spec = spec(
    "pexpireat",
    "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
    "2.6.0",
    |ctx, args| expire(ctx, args, Unit::Milliseconds, false, "pexpireat"),
);

/// The NX/XX/GT/LT condition.
#[derive(Default)]
struct Condition {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Condition {
    fn parse(options: &[Bytes]) -> Result<Condition, Error> {
        let mut c = Condition::default();
        for opt in options {
            match () {
                _ if is(opt, "nx") => c.nx = true,
                _ if is(opt, "xx") => c.xx = true,
                _ if is(opt, "gt") => c.gt = true,
                _ if is(opt, "lt") => c.lt = true,
                _ => {
                    return Err(
                        format!("ERR Unsupported option {}", String::from_utf8_lossy(opt)).into(),
                    )
                }
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(
                "ERR NX and XX, GT or LT options at the same time are not compatible".into(),
            );
        }
        if c.gt && c.lt {
            return Err("ERR GT and LT options at the same time are not compatible".into());
        }
        Ok(c)
    }

    /// Whether a key whose deadline is `current` (None: persistent) may get
    /// deadline `when`. A persistent key counts as an infinite TTL.
    fn allows(&self, current: Option<i64>, when: i64) -> bool {
        match current {
            None => !(self.xx || self.gt),
            Some(current) => {
                !(self.nx || (self.gt && when <= current) || (self.lt && when >= current))
            }
        }
    }
}

fn expire(
    ctx: &mut Ctx,
    args: &[Bytes],
    unit: Unit,
    relative: bool,
    command: &str,
) -> Result<(), Error> {
    let condition = Condition::parse(&args[3..])?;
    let when = deadline_ms(&args[2], unit, relative, true, ctx.now_ms, command)?;
    let key = &args[1];
    let db = ctx.db();
    let mut shard = db.write(key);
    let Some(mut entry) = shard.get_mut(key) else {
        ctx.w().integer(0);
        return Ok(());
    };
    let current = entry.entry().expire_at_ms().map(|t| t as i64);
    if !condition.allows(current, when) {
        ctx.w().integer(0);
        return Ok(());
    }
    let event = if when <= ctx.now_ms as i64 {
        crate::lazyfree::free_expired(entry.remove());
        "del"
    } else {
        ctx.reserve(Shard::deadline_growth(entry.entry()))?;
        entry.set_expire_at_ms(Some(when as u64));
        "expire"
    };
    ctx.notify(Events::GENERIC, event, key);
    ctx.w().integer(1);
    Ok(())
}

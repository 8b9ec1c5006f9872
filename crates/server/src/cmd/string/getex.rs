//! GETEX key [EX s|PX ms|EXAT ts|PXAT ts|PERSIST] — GET that also sets or
//! clears the TTL.

use bytes::Bytes;
use keel_store::Shard;

use crate::cmd::context::strings::{option_deadline, parse_options, Kind, Ttl};
use crate::cmd::context::{errors, write_str, Ctx, Error, Events, Spec, BASE};

/// GETEX.
pub const SPEC: Spec = Spec {
    name: "getex",
    arity: -2,
    flags: &["write", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@fast"],
    group: "string",
    summary: "Get the value of a key and optionally set its expiration",
    since: "6.2.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let options = parse_options(args, 2, Kind::GetEx)?;
    let key = &args[1];
    let db = ctx.db();
    let mut shard = db.write(key);
    let Some(mut entry) = shard.get_mut(key) else {
        ctx.count_lookup(key, false);
        ctx.w().null();
        return Ok(());
    };
    ctx.count_lookup(key, true);
    let Some(s) = entry.entry().value().as_str() else {
        return Err(errors::WRONGTYPE.into());
    };
    // Like Redis: the time is validated only once the key is known to be a
    // string, and before anything is replied.
    let deadline = option_deadline(ctx, args, options.ttl, "getex")?;
    if deadline.is_some_and(|at| at > ctx.now_ms) {
        ctx.reserve(Shard::deadline_growth(entry.entry()))?;
    }
    write_str(&mut ctx.w(), s);
    let event = match (options.ttl, deadline) {
        (_, Some(at)) if at <= ctx.now_ms => {
            entry.remove();
            "del"
        }
        (_, Some(at)) => {
            entry.set_expire_at_ms(Some(at));
            "expire"
        }
        (Ttl::Persist, None) if entry.entry().expire_at_ms().is_some() => {
            entry.set_expire_at_ms(None);
            "persist"
        }
        _ => return Ok(()),
    };
    ctx.notify(Events::GENERIC, event, key);
    Ok(())
}

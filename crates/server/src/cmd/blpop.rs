//! The blocking pops: BLPOP and BRPOP key [key ...] timeout, and BLMOVE
//! source destination LEFT|RIGHT LEFT|RIGHT timeout; the sorted-set ones
//! (`bzpop`) share the way they try and block.
//!
//! Each first tries at once, keys in order, exactly as LPOP/RPOP/LMOVE
//! would. If every key is missing the client blocks (see
//! `crate::blocking`); inside a transaction it does not block and answers
//! nil at once, as Redis does.

use bytes::Bytes;
use keel_store::End;

use super::collection::limits;
use super::lmove::{end, Pop};
use crate::blocking::{write_outcome, Outcome, Wait};
use crate::client::AfterReply;
use crate::cmd::context::{parse_f64, Ctx, Error, Spec, BASE};

const fn spec(
    name: &'static str,
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -3,
        flags: &["write", "noscript", "blocking"],
        keys: (1, -2, 1),
        acl: &["@write", "@list", "@slow", "@blocking"],
        group: "list",
        summary,
        since: "2.0.0",
        complexity: "O(N) where N is the number of provided keys.",
        run,
        ..BASE
    }
}

/// BLPOP.
pub const BLPOP: Spec = spec(
    "blpop",
    "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
    |ctx, args| pop_any(ctx, args, End::Left),
);

/// BRPOP.
pub const BRPOP: Spec = spec(
    "brpop",
    "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
    |ctx, args| pop_any(ctx, args, End::Right),
);

/// BLMOVE.
pub const BLMOVE: Spec = Spec {
    arity: 6,
    flags: &["write", "denyoom", "noscript", "blocking"],
    keys: (1, 2, 1),
    since: "6.2.0",
    complexity: "O(1)",
    ..spec(
        "blmove",
        "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.",
        |ctx, args| {
            let pop = Pop {
                from: end(&args[3])?,
                to: Some((args[2].clone(), end(&args[4])?)),
            };
            let deadline = deadline(&args[5])?;
            block(ctx, &args[1..2], Wait::List(pop), deadline)
        },
    )
};

fn pop_any(ctx: &mut Ctx, args: &[Bytes], from: End) -> Result<(), Error> {
    pop_first(ctx, args, Wait::List(Pop { from, to: None }))
}

/// The blocking pops of the form `key [key ...] timeout`: `wait` on the
/// first key that has an element.
pub fn pop_first(ctx: &mut Ctx, args: &[Bytes], wait: Wait) -> Result<(), Error> {
    let deadline = deadline(&args[args.len() - 1])?;
    block(ctx, &args[1..args.len() - 1], wait, deadline)
}

/// Parses a timeout in seconds (a float; 0 waits forever) into a deadline,
/// with Redis's errors and its truncation to whole milliseconds.
fn deadline(arg: &[u8]) -> Result<Option<tokio::time::Instant>, Error> {
    let seconds = parse_f64(arg).ok_or("ERR timeout is not a float or out of range")?;
    // Redis converts with a C cast, which on x86-64 turns anything out of
    // range (infinity included) into i64::MIN: "negative".
    let ms = seconds * 1000.0;
    let ms = if ms.abs() < 9.2e18 {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms > i64::MAX - crate::server::unix_ms() as i64 {
        return Err("ERR timeout is out of range".into());
    }
    // 0 waits forever, and so does a deadline too far to represent.
    let wait = std::time::Duration::from_millis(ms as u64);
    Ok((ms > 0)
        .then(|| tokio::time::Instant::now().checked_add(wait))
        .flatten())
}

/// Pops from the first of `sources` that has an element, or blocks.
fn block(
    ctx: &mut Ctx,
    sources: &[Bytes],
    wait: Wait,
    deadline: Option<tokio::time::Instant>,
) -> Result<(), Error> {
    let limits = limits(ctx);
    let db = ctx.db();
    let keys: Vec<Bytes> = sources.iter().flat_map(|s| wait.keys(s)).collect();
    let mut locked = db.write_many(&keys);
    for source in sources {
        if let Some(popped) = wait.apply(&mut locked, source, &limits)? {
            let key = source.clone();
            write_outcome(&mut ctx.w(), &wait, Some(Outcome::Popped { key, popped }));
            return Ok(());
        }
    }
    if ctx.client.tx.executing {
        wait.write_nothing(&mut ctx.w());
        return Ok(());
    }
    ctx.client.handle.set_blocked(true);
    let blocking = &ctx.server.blocking;
    let blocked = blocking.register(ctx.client.db, sources.to_vec(), wait, deadline);
    drop(locked);
    ctx.client.after_reply = Some(AfterReply::Block(blocked));
    Ok(())
}

//! SLOWLOG GET [count] | LEN | RESET — read and clear the slow log (see
//! `crate::slowlog`), with Redis 7's replies and errors.

use bytes::Bytes;

use crate::cmd::context::{parse_i64, subcommand_syntax_error, Ctx, Error, Spec, BASE, HELP};

/// SLOWLOG (container).
pub const SPEC: Spec = Spec {
    name: "slowlog",
    arity: -2,
    acl: &["@slow"],
    group: "server",
    summary: "A container for slow log commands",
    since: "2.2.12",
    complexity: "Depends on subcommand.",
    subcommands: &[&GET, &LEN, &RESET, &SLOWLOG_HELP],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["admin", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    since: "2.2.12",
    ..BASE
};

const GET: Spec = Spec {
    name: "slowlog|get",
    arity: -2,
    summary: "Get the slow log's entries",
    complexity: "O(N) where N is the number of entries returned",
    run: get,
    ..SUB
};

const LEN: Spec = Spec {
    name: "slowlog|len",
    arity: 2,
    summary: "Get the slow log's length",
    run: |ctx, _| {
        let len = ctx.server.slowlog.len();
        ctx.w().integer(len as i64);
        Ok(())
    },
    ..SUB
};

const RESET: Spec = Spec {
    name: "slowlog|reset",
    arity: 2,
    summary: "Clear all entries from the slow log",
    complexity: "O(N) where N is the number of entries in the slowlog",
    run: |ctx, _| {
        ctx.server.slowlog.reset();
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const SLOWLOG_HELP: Spec = Spec {
    name: "slowlog|help",
    group: "server",
    since: "6.2.0",
    ..HELP
};

/// Entries SLOWLOG GET returns without a count.
const DEFAULT_COUNT: usize = 10;

fn get(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let count = match args {
        [_, _] => DEFAULT_COUNT,
        [_, _, count] => match parse_i64(count) {
            Ok(-1) => usize::MAX,
            Ok(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Err("ERR count should be greater than or equal to -1".into()),
        },
        _ => return Err(subcommand_syntax_error(args)),
    };
    let entries = ctx.server.slowlog.newest(count);
    let mut w = ctx.w();
    w.array(entries.len());
    for entry in entries {
        w.array(6);
        w.integer(entry.id as i64);
        w.integer(entry.unix_seconds as i64);
        w.integer(entry.duration_usec as i64);
        w.array(entry.args.len());
        entry.args.iter().for_each(|arg| w.bulk(arg));
        w.bulk(entry.peer.as_bytes());
        w.bulk(entry.client_name.as_bytes());
    }
    Ok(())
}

//! XGROUP CREATE | SETID | DESTROY | CREATECONSUMER | DELCONSUMER | HELP —
//! consumer groups and their consumers.

use bytes::Bytes;
use keel_store::types::stream::INVALID_ENTRIES_READ;
use keel_store::Stream;

use crate::cmd::context::collection::{update_tracked, Edit, Missing};
use crate::cmd::context::stream::{no_group, parse_id_with, parse_strict_id, CLASS};
use crate::cmd::context::{is, parse_i64, subcommand_syntax_error, Ctx, Error, Spec, BASE, HELP};

/// XGROUP (container).
pub const SPEC: Spec = Spec {
    name: "xgroup",
    arity: -2,
    acl: &["@slow"],
    group: "stream",
    summary: "A container for consumer groups commands",
    since: "5.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &CREATE,
        &SETID,
        &DESTROY,
        &CREATECONSUMER,
        &DELCONSUMER,
        &XGROUP_HELP,
    ],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["write"],
    keys: (2, 2, 1),
    acl: &["@write", "@stream", "@slow"],
    group: "stream",
    since: "5.0.0",
    ..BASE
};

const CREATE: Spec = Spec {
    name: "xgroup|create",
    arity: -5,
    flags: &["write", "denyoom"],
    summary: "Create a consumer group.",
    run: |ctx, args| {
        let (mkstream, entries_read) = parse_options(args, true)?;
        let missing = if mkstream {
            Missing::Create
        } else {
            Missing::Skip
        };
        let created = group_op(ctx, args, missing, "xgroup-create", |s| {
            // Redis checks the count last: a repeated MKSTREAM parses.
            if args.len() > 8 {
                return Err(subcommand_syntax_error(args));
            }
            let id = match &args[4][..] {
                b"$" => s.last_id(),
                id => parse_strict_id(id)?,
            };
            if !s.create_group(&args[3], id, entries_read) {
                return Err("BUSYGROUP Consumer Group name already exists".into());
            }
            Ok(Edit::changed(()))
        })?;
        created.ok_or(REQUIRES_KEY)?;
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const SETID: Spec = Spec {
    name: "xgroup|setid",
    arity: -5,
    summary: "Set a consumer group to an arbitrary last delivered ID value.",
    run: |ctx, args| {
        let (_, entries_read) = parse_options(args, false)?;
        group_op(ctx, args, Missing::Skip, "xgroup-setid", |s| {
            if s.group(&args[3]).is_none() {
                return Err(no_group(&args[2], &args[3]));
            }
            let id = match &args[4][..] {
                b"$" => s.last_id(),
                id => parse_id_with(id, 0, false, false)?.id,
            };
            if !s.set_group_id(&args[3], id, entries_read) {
                return Err(no_group(&args[2], &args[3]));
            }
            Ok(Edit::changed(()))
        })?
        .ok_or(REQUIRES_KEY)?;
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const DESTROY: Spec = Spec {
    name: "xgroup|destroy",
    arity: 4,
    summary: "Destroy a consumer group.",
    complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).",
    run: |ctx, args| {
        let destroyed = group_op(ctx, args, Missing::Skip, "xgroup-destroy", |s| {
            let destroyed = s.destroy_group(&args[3]);
            Ok(Edit::changed_if(destroyed, destroyed))
        })?
        .ok_or(REQUIRES_KEY)?;
        ctx.w().integer(i64::from(destroyed));
        Ok(())
    },
    ..SUB
};

const CREATECONSUMER: Spec = Spec {
    name: "xgroup|createconsumer",
    arity: 5,
    flags: &["write", "denyoom"],
    summary: "Create a consumer in a consumer group.",
    since: "6.2.0",
    run: |ctx, args| {
        let now_ms = ctx.now_ms as i64;
        let created = group_op(ctx, args, Missing::Skip, "xgroup-createconsumer", |s| {
            if s.group(&args[3]).is_none() {
                return Err(no_group(&args[2], &args[3]));
            }
            let created = s.create_consumer(&args[3], &args[4], now_ms);
            Ok(Edit::changed_if(created, created))
        })?
        .ok_or(REQUIRES_KEY)?;
        ctx.w().integer(i64::from(created));
        Ok(())
    },
    ..SUB
};

const DELCONSUMER: Spec = Spec {
    name: "xgroup|delconsumer",
    arity: 5,
    summary: "Delete a consumer from a consumer group.",
    run: |ctx, args| {
        let pending = group_op(ctx, args, Missing::Skip, "xgroup-delconsumer", |s| {
            if s.group(&args[3]).is_none() {
                return Err(no_group(&args[2], &args[3]));
            }
            let pending = s.delete_consumer(&args[3], &args[4]);
            Ok(Edit::changed_if(pending.is_some(), pending.unwrap_or(0)))
        })?
        .ok_or(REQUIRES_KEY)?;
        ctx.w().integer(pending as i64);
        Ok(())
    },
    ..SUB
};

const XGROUP_HELP: Spec = Spec {
    name: "xgroup|help",
    acl: &["@stream", "@slow"],
    group: "stream",
    since: "5.0.0",
    run: |ctx, _| {
        write_help(
            ctx,
            &[
                "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CREATE <key> <groupname> <id|$> [option]",
                "    Create a new consumer group. Options are:",
                "    * MKSTREAM",
                "      Create the empty stream if it does not exist.",
                "    * ENTRIESREAD entries_read",
                "      Set the group's entries_read counter (internal use).",
                "CREATECONSUMER <key> <groupname> <consumer>",
                "    Create a new consumer in the specified group.",
                "DELCONSUMER <key> <groupname> <consumer>",
                "    Remove the specified consumer.",
                "DESTROY <key> <groupname>",
                "    Remove the specified group.",
                "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
                "    Set the current group ID and entries_read counter.",
                "HELP",
                "    Prints this help.",
            ],
        );
        Ok(())
    },
    ..HELP
};

/// Writes a container's help lines as status replies.
fn write_help(ctx: &mut Ctx, lines: &[&str]) {
    let mut w = ctx.w();
    w.array(lines.len());
    lines.iter().for_each(|l| w.simple(l));
}

const REQUIRES_KEY: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";

/// CREATE's and SETID's options after the ID: MKSTREAM (CREATE only,
/// when `mkstream` allows it) and ENTRIESREAD, parsed as Redis does before
/// it looks the key up.
fn parse_options(args: &[Bytes], mkstream: bool) -> Result<(bool, i64), Error> {
    let mut make = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    let mut i = 5;
    while i < args.len() {
        if mkstream && is(&args[i], "mkstream") {
            make = true;
        } else if is(&args[i], "entriesread") && i + 1 < args.len() {
            entries_read = parse_entries_read(&args[i + 1])?;
            i += 1;
        } else {
            return Err(subcommand_syntax_error(args));
        }
        i += 1;
    }
    Ok((make, entries_read))
}

/// ENTRIESREAD's value: positive, or -1 for "unknown".
fn parse_entries_read(arg: &[u8]) -> Result<i64, Error> {
    let n = parse_i64(arg)?;
    if n < 0 && n != INVALID_ENTRIES_READ {
        return Err("ERR value for ENTRIESREAD must be positive or -1".into());
    }
    Ok(n)
}

/// Runs `f` on the stream at `args[2]` (created when `missing` says so),
/// publishing `event` if it changed it; `None` when the key is missing.
fn group_op<R>(
    ctx: &mut Ctx,
    args: &[Bytes],
    missing: Missing,
    event: &str,
    f: impl FnOnce(&mut Stream) -> Result<Edit<R>, Error>,
) -> Result<Option<R>, Error> {
    let key = &args[2];
    let (result, outcome) = {
        let db = ctx.db();
        let mut shard = db.write(key);
        update_tracked(&mut shard, key, missing, f)?
    };
    if outcome.changed {
        ctx.notify(CLASS, event, key);
    }
    Ok(result)
}

//! XINFO STREAM key [FULL [COUNT count]] | GROUPS key | CONSUMERS key
//! group | HELP — introspection of a stream, its groups and consumers,
//! with Redis 7.0's fields (entries-read, lag, max-deleted-entry-id, ...).

use bytes::Bytes;
use keel_resp::Writer;
use keel_store::types::stream::{Group, INVALID_ENTRIES_READ};
use keel_store::{Stream, StreamId};

use crate::cmd::context::collection::read;
use crate::cmd::context::stream::{no_group, write_entry};
use crate::cmd::context::{
    errors, is, parse_i64, subcommand_syntax_error, write_each, Ctx, Error, Spec, BASE, HELP,
};

/// XINFO (container).
pub const SPEC: Spec = Spec {
    name: "xinfo",
    arity: -2,
    acl: &["@slow"],
    group: "stream",
    summary: "A container for stream introspection commands",
    since: "5.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[&CONSUMERS, &GROUPS, &STREAM, &XINFO_HELP],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["readonly"],
    keys: (2, 2, 1),
    acl: &["@read", "@stream", "@slow"],
    group: "stream",
    since: "5.0.0",
    ..BASE
};

const CONSUMERS: Spec = Spec {
    name: "xinfo|consumers",
    arity: 4,
    summary: "List the consumers in a consumer group",
    run: |ctx, args| {
        let now_ms = ctx.now_ms as i64;
        with_stream(ctx, args, |w, s| {
            let group = s
                .group(&args[3])
                .ok_or_else(|| no_group(&args[2], &args[3]))?;
            w.array(group.consumers.len());
            write_each(w, group.consumers.iter(), |w, (name, c)| {
                w.map(3);
                w.bulk(b"name");
                w.bulk(name);
                w.bulk(b"pending");
                w.integer(c.pending.len() as i64);
                w.bulk(b"idle");
                w.integer(now_ms.wrapping_sub(c.seen_time).max(0));
            });
            Ok(())
        })
    },
    ..SUB
};

const GROUPS: Spec = Spec {
    name: "xinfo|groups",
    arity: 3,
    summary: "List the consumer groups of a stream",
    run: |ctx, args| {
        with_stream(ctx, args, |w, s| {
            w.array(s.groups().len());
            write_each(w, s.groups().iter(), |w, (name, g)| {
                w.map(6);
                w.bulk(b"name");
                w.bulk(name);
                w.bulk(b"consumers");
                w.integer(g.consumers.len() as i64);
                w.bulk(b"pending");
                w.integer(g.pending.len() as i64);
                write_progress(w, s, g);
            });
            Ok(())
        })
    },
    ..SUB
};

const STREAM: Spec = Spec {
    name: "xinfo|stream",
    arity: -3,
    summary: "Get information about a stream",
    run: |ctx, args| {
        let full = match args.len() {
            3 => None,
            4 if is(&args[3], "full") => Some(10),
            6 if is(&args[3], "full") && is(&args[4], "count") => {
                // A negative COUNT means the default, as in Redis.
                Some(match parse_i64(&args[5])? {
                    n if n < 0 => 10,
                    n => n,
                })
            }
            _ => return Err(subcommand_syntax_error(args)),
        };
        with_stream(ctx, args, |w, s| {
            match full {
                None => write_summary(w, s),
                Some(count) => write_full(w, s, count),
            }
            Ok(())
        })
    },
    ..SUB
};

const XINFO_HELP: Spec = Spec {
    name: "xinfo|help",
    acl: &["@stream", "@slow"],
    group: "stream",
    since: "5.0.0",
    run: |ctx, _| {
        let lines = [
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Prints this help.",
        ];
        let mut w = ctx.w();
        w.array(lines.len());
        lines.iter().for_each(|l| w.simple(l));
        Ok(())
    },
    ..HELP
};

/// Runs `f` with the reply writer on the stream at `args[2]`; "no such
/// key" when it is missing.
fn with_stream(
    ctx: &mut Ctx,
    args: &[Bytes],
    f: impl FnOnce(&mut Writer, &Stream) -> Result<(), Error>,
) -> Result<(), Error> {
    read(ctx, &args[2], |ctx, s: Option<&Stream>| {
        let s = s.ok_or(errors::NO_SUCH_KEY)?;
        f(&mut ctx.w(), s)
    })
}

fn bulk_id(w: &mut Writer, id: StreamId) {
    w.bulk(id.to_string().as_bytes());
}

/// A group's last delivered ID, read counter and lag (null when unknown).
fn write_progress(w: &mut Writer, s: &Stream, g: &Group) {
    w.bulk(b"last-delivered-id");
    bulk_id(w, g.last_id);
    w.bulk(b"entries-read");
    match g.entries_read {
        INVALID_ENTRIES_READ => w.null(),
        n => w.integer(n),
    }
    w.bulk(b"lag");
    match s.lag(g) {
        Some(lag) => w.integer(lag),
        None => w.null(),
    }
}

/// The fields XINFO STREAM starts with, FULL or not.
fn write_head(w: &mut Writer, s: &Stream) {
    w.bulk(b"length");
    w.integer(s.len() as i64);
    w.bulk(b"radix-tree-keys");
    w.integer(s.node_count() as i64);
    w.bulk(b"radix-tree-nodes");
    w.integer(s.radix_tree_nodes() as i64);
    w.bulk(b"last-generated-id");
    bulk_id(w, s.last_id());
    w.bulk(b"max-deleted-entry-id");
    bulk_id(w, s.max_deleted_id());
    w.bulk(b"entries-added");
    w.integer(s.entries_added() as i64);
    w.bulk(b"recorded-first-entry-id");
    bulk_id(w, s.first_id());
}

fn write_summary(w: &mut Writer, s: &Stream) {
    w.map(10);
    write_head(w, s);
    w.bulk(b"groups");
    w.integer(s.groups().len() as i64);
    let first = s.range(StreamId::MIN, StreamId::MAX).next();
    let last = s.range_rev(StreamId::MIN, StreamId::MAX).next();
    for (name, entry) in [(&b"first-entry"[..], first), (b"last-entry", last)] {
        w.bulk(name);
        match entry {
            Some((id, fields)) => write_entry(w, id, fields),
            None => w.null(),
        }
    }
}

fn write_full(w: &mut Writer, s: &Stream, count: i64) {
    let limit = match count {
        0 => usize::MAX,
        n => usize::try_from(n).unwrap_or(usize::MAX),
    };
    w.map(9);
    write_head(w, s);
    w.bulk(b"entries");
    let entries: Vec<_> = s.range(StreamId::MIN, StreamId::MAX).take(limit).collect();
    w.array(entries.len());
    write_each(w, entries.iter(), |w, (id, fields)| {
        write_entry(w, *id, *fields)
    });
    w.bulk(b"groups");
    w.array(s.groups().len());
    for (name, g) in s.groups() {
        w.map(7);
        w.bulk(b"name");
        w.bulk(name);
        write_progress(w, s, g);
        w.bulk(b"pel-count");
        w.integer(g.pending.len() as i64);
        w.bulk(b"pending");
        let pending: Vec<_> = g.pending.iter().take(limit).collect();
        w.array(pending.len());
        write_each(w, pending.iter(), |w, (id, p)| {
            w.array(4);
            bulk_id(w, **id);
            w.bulk(&p.consumer);
            w.integer(p.delivery_time);
            w.integer(p.delivery_count as i64);
        });
        w.bulk(b"consumers");
        w.array(g.consumers.len());
        for (name, c) in &g.consumers {
            w.map(4);
            w.bulk(b"name");
            w.bulk(name);
            w.bulk(b"seen-time");
            w.integer(c.seen_time);
            w.bulk(b"pel-count");
            w.integer(c.pending.len() as i64);
            w.bulk(b"pending");
            let own: Vec<_> = c.pending.iter().take(limit).collect();
            w.array(own.len());
            write_each(w, own.iter(), |w, id| {
                let p = g.pending.get(id);
                w.array(3);
                bulk_id(w, **id);
                w.integer(p.map_or(0, |p| p.delivery_time));
                w.integer(p.map_or(0, |p| p.delivery_count as i64));
            });
        }
    }
}

//! HSCAN, SSCAN and ZSCAN key cursor [MATCH pattern] [COUNT count] — iterate a
//! collection a few elements at a time, with the same guarantee as SCAN
//! (see `keel_store::types::table`).

use keel_store::{Hash, Set, ZSet};

use crate::cmd::context::collection::{read, scan_options, write_scan_reply};
use crate::cmd::context::{Spec, BASE};

const fn spec(
    name: &'static str,
    group: &'static str,
    acl: &'static [&'static str],
    summary: &'static str,
    run: crate::cmd::context::Handler,
) -> Spec {
    Spec {
        name,
        arity: -3,
        flags: &["readonly"],
        keys: (1, 1, 1),
        acl,
        group,
        summary,
        since: "2.8.0",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        run,
        ..BASE
    }
}

/// HSCAN.
pub const HSCAN: Spec = spec(
    "hscan",
    "hash",
    &["@read", "@hash", "@slow"],
    "Incrementally iterate hash fields and associated values",
    |ctx, args| {
        let (cursor, options) = scan_options(args)?;
        let (next, found) = read(ctx, &args[1], |_, hash: Option<&Hash>| {
            let mut found = Vec::new();
            let next = hash.map_or(0, |h| {
                h.scan(cursor, options.count, |f, v| {
                    if options.matches(f) {
                        found.push(f.to_vec());
                        found.push(v.to_vec());
                    }
                })
            });
            Ok((next, found))
        })?;
        write_scan_reply(ctx, next, &found);
        Ok(())
    },
);

/// SSCAN.
pub const SSCAN: Spec = spec(
    "sscan",
    "set",
    &["@read", "@set", "@slow"],
    "Incrementally iterate Set elements",
    |ctx, args| {
        let (cursor, options) = scan_options(args)?;
        let (next, found) = read(ctx, &args[1], |_, set: Option<&Set>| {
            let mut found = Vec::new();
            let next = set.map_or(0, |s| {
                s.scan(cursor, options.count, |m| {
                    if options.matches(m) {
                        found.push(m.to_vec());
                    }
                })
            });
            Ok((next, found))
        })?;
        write_scan_reply(ctx, next, &found);
        Ok(())
    },
);

/// ZSCAN: members and their scores (as text, in RESP3 too, as Redis).
pub const ZSCAN: Spec = spec(
    "zscan",
    "sorted-set",
    &["@read", "@sortedset", "@slow"],
    "Incrementally iterate sorted sets elements and associated scores",
    |ctx, args| {
        let (cursor, options) = scan_options(args)?;
        let (next, found) = read(ctx, &args[1], |_, zset: Option<&ZSet>| {
            let mut found = Vec::new();
            let next = zset.map_or(0, |z| {
                z.scan(cursor, options.count, |m, s| {
                    if options.matches(m) {
                        found.push(m.to_vec());
                        found.push(keel_resp::format_double(s).into_bytes());
                    }
                })
            });
            Ok((next, found))
        })?;
        write_scan_reply(ctx, next, &found);
        Ok(())
    },
);

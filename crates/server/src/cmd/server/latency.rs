//! LATENCY HISTOGRAM [command ...] — the latency histograms of commands
//! and of keel's background work (see `crate::latency`), in Redis 7's
//! reply shape.

use bytes::Bytes;

use crate::latency::Snapshot;
use crate::stats::{every_series, Series, Work};

use crate::cmd::context::{is, Ctx, Error, Spec, BASE, HELP};
use crate::cmd::registry::Table;

/// LATENCY (container).
pub const SPEC: Spec = Spec {
    name: "latency",
    arity: -2,
    acl: &["@slow"],
    group: "server",
    summary: "A container for latency diagnostics commands.",
    since: "2.8.13",
    complexity: "Depends on subcommand.",
    subcommands: &[&HISTOGRAM, &LATENCY_HELP],
    ..BASE
};

const HISTOGRAM: Spec = Spec {
    name: "latency|histogram",
    arity: -2,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Returns the cumulative distribution of latencies of a subset or all commands.",
    since: "7.0.0",
    complexity: "O(N) where N is the number of commands with latency information being retrieved.",
    run: histogram,
    ..BASE
};

const LATENCY_HELP: Spec = Spec {
    name: "latency|help",
    since: "2.8.13",
    ..HELP
};

/// Replies with a map from each named series that has samples (every
/// series without names) to its number of samples and its cumulative
/// counts per bucket, listing only the buckets that add samples, as
/// Redis does. A name may be a command, a container (its subcommands
/// follow it), `a|b` for a subcommand, or a background work name; unknown
/// names are skipped and a name given twice is listed twice, as in Redis.
fn histogram(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let table = &ctx.server.commands;
    let series: Vec<(&str, Series)> = match &args[2..] {
        [] => every_series(table).collect(),
        names => names.iter().flat_map(|n| named(table, n)).collect(),
    };
    let reported: Vec<(&str, Snapshot)> = series
        .into_iter()
        .map(|(name, series)| (name, ctx.server.stats.latency(series)))
        .filter(|(_, snapshot)| snapshot.count() > 0)
        .collect();
    let mut w = ctx.w();
    w.map(reported.len());
    for (name, snapshot) in reported {
        w.bulk(name.as_bytes());
        w.map(2);
        w.bulk(b"calls");
        w.integer(snapshot.count() as i64);
        w.bulk(b"histogram_usec");
        let buckets: Vec<_> = snapshot.buckets().filter(|b| b.count > 0).collect();
        w.map(buckets.len());
        for bucket in buckets {
            w.integer(bucket.bound_usec as i64);
            w.integer(bucket.cumulative as i64);
        }
    }
    Ok(())
}

/// The series `name` stands for.
fn named(table: &Table, name: &[u8]) -> Vec<(&'static str, Series)> {
    if let Some(work) = Work::ALL.into_iter().find(|w| is(name, w.name())) {
        return vec![(work.name(), Series::Work(work))];
    }
    let Some(id) = table.id(name) else {
        return Vec::new();
    };
    let spec = table.specs()[id];
    let subcommands = spec.subcommands.iter().filter_map(|sub| {
        let id = table.id(sub.name.as_bytes())?;
        Some((sub.name, Series::Command(id)))
    });
    std::iter::once((spec.name, Series::Command(id)))
        .chain(subcommands)
        .collect()
}

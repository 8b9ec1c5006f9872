//! LATENCY HISTOGRAM [command ...] — the latency histograms of commands
//! and of keel's background work (see `crate::latency`), in Redis 7's
//! reply shape — and the latency monitor's LATENCY LATEST | HISTORY event
//! | RESET [event ...] | GRAPH event | DOCTOR (see `crate::latency_monitor`
//! for its events).

use bytes::Bytes;

use crate::latency::Snapshot;
use crate::latency_monitor::{doctor, graph, DoctorContext};
use crate::stats::{every_series, Series, Work};

use crate::cmd::context::{is, Ctx, Error, Spec, BASE, HELP};
use crate::cmd::registry::Table;

/// LATENCY (container).
pub const SPEC: Spec = Spec {
    name: "latency",
    arity: -2,
    acl: &["@slow"],
    group: "server",
    summary: "A container for latency diagnostics commands",
    since: "2.8.13",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &DOCTOR,
        &GRAPH,
        &HISTORY,
        &LATEST,
        &RESET,
        &HISTOGRAM,
        &LATENCY_HELP,
    ],
    ..BASE
};

/// What the monitor's subcommands share.
const MONITOR_SUB: Spec = Spec {
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    since: "2.8.13",
    ..BASE
};

const LATEST: Spec = Spec {
    name: "latency|latest",
    arity: 2,
    summary: "Return the latest latency samples for all events.",
    run: latest,
    ..MONITOR_SUB
};

const HISTORY: Spec = Spec {
    name: "latency|history",
    arity: 3,
    summary: "Return timestamp-latency samples for the event.",
    run: history,
    ..MONITOR_SUB
};

const RESET: Spec = Spec {
    name: "latency|reset",
    arity: -2,
    summary: "Reset latency data for one or more events.",
    run: |ctx, args| {
        let events: Vec<&[u8]> = args[2..].iter().map(|e| &e[..]).collect();
        let reset = ctx.server.stats.latency_monitor.reset(&events);
        ctx.w().integer(reset as i64);
        Ok(())
    },
    ..MONITOR_SUB
};

const GRAPH: Spec = Spec {
    name: "latency|graph",
    arity: 3,
    summary: "Return a latency graph for the event.",
    run: |ctx, args| {
        let Some(series) = ctx.server.stats.latency_monitor.series(&args[2]) else {
            return Err(format!(
                "ERR No samples available for event '{}'",
                String::from_utf8_lossy(&args[2])
            )
            .into());
        };
        let event = String::from_utf8_lossy(&args[2]);
        let text = graph(&event, &series, ctx.now_ms / 1000);
        ctx.w().verbatim(b"txt", text.as_bytes());
        Ok(())
    },
    ..MONITOR_SUB
};

const DOCTOR: Spec = Spec {
    name: "latency|doctor",
    arity: 2,
    summary: "Return a human readable latency analysis report.",
    run: |ctx, _| {
        let context = {
            let config = ctx.server.config.read();
            DoctorContext {
                threshold_ms: config.latency_monitor_threshold,
                slowlog_slower_than_usec: config.slowlog_log_slower_than,
                slowlog_max_len: config.slowlog_max_len,
            }
        };
        let events = ctx.server.stats.latency_monitor.events();
        let report = doctor(&events, &context, ctx.now_ms / 1000);
        ctx.w().verbatim(b"txt", report.as_bytes());
        Ok(())
    },
    ..MONITOR_SUB
};

const HISTOGRAM: Spec = Spec {
    name: "latency|histogram",
    arity: -2,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "Return the cumulative distribution of latencies of a subset of commands or all.",
    since: "7.0.0",
    complexity: "O(N) where N is the number of commands with latency information being retrieved.",
    run: histogram,
    ..BASE
};

const LATENCY_HELP: Spec = Spec {
    name: "latency|help",
    summary: "Show helpful text about the different subcommands.",
    group: "server",
    since: "2.8.13",
    ..HELP
};

/// Each event with a spike: its name, the time and latency of its latest
/// spike and its worst ever.
fn latest(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let events = ctx.server.stats.latency_monitor.events();
    let mut w = ctx.w();
    w.array(events.len());
    for (name, series) in events {
        let latest = series.latest();
        w.array(4);
        w.bulk(name.as_bytes());
        w.integer(latest.time as i64);
        w.integer(latest.latency as i64);
        w.integer(series.max as i64);
    }
    Ok(())
}

/// The event's samples, oldest first, as (time, latency) pairs; none for
/// an event without spikes.
fn history(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let series = ctx.server.stats.latency_monitor.series(&args[2]);
    let samples: Vec<_> = series.iter().flat_map(|s| s.history()).collect();
    let mut w = ctx.w();
    w.array(samples.len());
    for sample in samples {
        w.array(2);
        w.integer(sample.time as i64);
        w.integer(sample.latency as i64);
    }
    Ok(())
}

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

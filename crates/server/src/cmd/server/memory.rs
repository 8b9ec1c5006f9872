//! MEMORY USAGE key [SAMPLES count] — bytes a key accounts for: its key and
//! value, its slot in the shard and its share of the index. keel counts
//! every value exactly, so SAMPLES is accepted and has nothing to sample.
//!
//! MEMORY STATS — where the process's memory goes, with Redis 7's field
//! names, and keel's own breakdown of the dataset (keys and values, the
//! tables holding them, the expiry index) and of the client budget.
//!
//! MEMORY DOCTOR — a report of memory problems Redis's doctor looks for
//! (a past peak, fragmentation, RSS overhead, big client buffers), framed
//! as Redis frames it. MEMORY PURGE — jemalloc gives its free pages back
//! to the system. MEMORY MALLOC-STATS — jemalloc's statistics report.

use bytes::Bytes;
use keel_store::Shard;

use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE, HELP};

/// MEMORY (container).
pub const SPEC: Spec = Spec {
    name: "memory",
    group: "server",
    arity: -2,
    acl: &["@slow"],
    summary: "A container for memory diagnostics commands",
    since: "4.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[&USAGE, &STATS, &DOCTOR, &PURGE, &MALLOC_STATS, &MEMORY_HELP],
    ..BASE
};

const USAGE: Spec = Spec {
    name: "memory|usage",
    group: "server",
    arity: -3,
    flags: &["readonly"],
    keys: (2, 2, 1),
    acl: &["@read", "@slow"],
    summary: "Estimate the memory usage of a key",
    since: "4.0.0",
    complexity: "O(N) where N is the number of samples.",
    run: usage,
    ..BASE
};

const STATS: Spec = Spec {
    name: "memory|stats",
    group: "server",
    arity: 2,
    acl: &["@slow"],
    summary: "Show memory usage details",
    since: "4.0.0",
    run: stats,
    ..BASE
};

const DOCTOR: Spec = Spec {
    name: "memory|doctor",
    group: "server",
    arity: 2,
    acl: &["@slow"],
    summary: "Outputs memory problems report",
    since: "4.0.0",
    run: doctor,
    ..BASE
};

const PURGE: Spec = Spec {
    name: "memory|purge",
    group: "server",
    arity: 2,
    acl: &["@slow"],
    summary: "Ask the allocator to release memory",
    since: "4.0.0",
    complexity: "Depends on how much memory is allocated, could be slow",
    run: |ctx, _| {
        crate::memory::purge();
        ctx.w().ok();
        Ok(())
    },
    ..BASE
};

const MALLOC_STATS: Spec = Spec {
    name: "memory|malloc-stats",
    group: "server",
    arity: 2,
    acl: &["@slow"],
    summary: "Show allocator internal stats",
    since: "4.0.0",
    complexity: "Depends on how much memory is allocated, could be slow",
    run: |ctx, _| {
        let report = crate::memory::malloc_stats();
        ctx.w().verbatim(b"txt", report.as_bytes());
        Ok(())
    },
    ..BASE
};

const MEMORY_HELP: Spec = Spec {
    name: "memory|help",
    group: "server",
    since: "4.0.0",
    ..HELP
};

fn usage(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    match &args[3..] {
        [] => {}
        [opt, n] if is(opt, "samples") => {
            parse_i64(n)?;
        }
        _ => return Err(errors::SYNTAX.into()),
    }
    let db = ctx.db();
    let shard = db.read(&args[2]);
    match shard.peek(&args[2]) {
        Some(entry) => ctx.w().integer(Shard::entry_bytes(entry) as i64),
        None => ctx.w().null(),
    }
    Ok(())
}

/// One MEMORY STATS value: a byte count, a ratio or percentage (a double
/// in Redis's reply), or a database's own breakdown.
enum Stat {
    Bytes(u64),
    Ratio(f64),
    Db(Vec<(&'static str, u64)>),
}

fn stats(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let server = ctx.server;
    let m = crate::memory::sample();
    let dataset = server.store.dataset_bytes() as u64;
    let clients = server.client_budget.used() as u64;
    let mut keys = 0u64;
    let mut fields: Vec<(String, Stat)> = vec![
        ("peak.allocated".into(), Stat::Bytes(m.peak)),
        ("total.allocated".into(), Stat::Bytes(m.allocated)),
        ("startup.allocated".into(), Stat::Bytes(m.startup)),
        ("replication.backlog".into(), Stat::Bytes(0)),
        ("clients.slaves".into(), Stat::Bytes(0)),
        ("clients.normal".into(), Stat::Bytes(clients)),
        ("cluster.links".into(), Stat::Bytes(0)),
        ("aof.buffer".into(), Stat::Bytes(0)),
        ("lua.caches".into(), Stat::Bytes(0)),
        ("functions.caches".into(), Stat::Bytes(0)),
    ];
    let (mut data, mut tables, mut expiry_index) = (0u64, 0u64, 0u64);
    for index in 0..server.store.databases() {
        let db = server.store.db(index, ctx.now_ms);
        let count = db.stats().keys as u64;
        if count == 0 {
            continue;
        }
        keys += count;
        let mem = db.memory();
        data += mem.data as u64;
        tables += mem.tables as u64;
        expiry_index += mem.expiry_index as u64;
        fields.push((
            format!("db.{index}"),
            Stat::Db(vec![
                ("overhead.hashtable.main", mem.tables as u64),
                ("overhead.hashtable.expires", mem.expiry_index as u64),
                ("keel.data", mem.data as u64),
            ]),
        ));
    }
    let overhead = m.allocated.saturating_sub(dataset);
    let percent = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    fields.extend([
        ("overhead.total".into(), Stat::Bytes(overhead)),
        ("keys.count".into(), Stat::Bytes(keys)),
        (
            "keys.bytes-per-key".into(),
            Stat::Bytes(m.allocated.saturating_sub(m.startup) / keys.max(1)),
        ),
        ("dataset.bytes".into(), Stat::Bytes(dataset)),
        (
            "dataset.percentage".into(),
            Stat::Ratio(percent(dataset, m.allocated)),
        ),
        (
            "peak.percentage".into(),
            Stat::Ratio(percent(m.allocated, m.peak)),
        ),
        ("allocator.allocated".into(), Stat::Bytes(m.allocated)),
        ("allocator.active".into(), Stat::Bytes(m.active)),
        ("allocator.resident".into(), Stat::Bytes(m.resident)),
        (
            "allocator-fragmentation.ratio".into(),
            Stat::Ratio(ratio(m.active, m.allocated)),
        ),
        (
            "allocator-fragmentation.bytes".into(),
            Stat::Bytes(m.active.saturating_sub(m.allocated)),
        ),
        (
            "fragmentation".into(),
            Stat::Ratio(ratio(m.resident, m.allocated)),
        ),
        (
            "fragmentation.bytes".into(),
            Stat::Bytes(m.resident.saturating_sub(m.allocated)),
        ),
        ("keel.dataset.data".into(), Stat::Bytes(data)),
        ("keel.dataset.tables".into(), Stat::Bytes(tables)),
        (
            "keel.dataset.expiry-index".into(),
            Stat::Bytes(expiry_index),
        ),
        (
            "keel.clients.budget".into(),
            Stat::Bytes(server.client_budget.limit() as u64),
        ),
    ]);
    let mut w = ctx.w();
    w.map(fields.len());
    for (name, value) in fields {
        w.bulk(name.as_bytes());
        match value {
            Stat::Bytes(n) => w.integer(n as i64),
            Stat::Ratio(r) => w.double(r),
            Stat::Db(parts) => {
                w.map(parts.len());
                for (k, v) in parts {
                    w.bulk(k.as_bytes());
                    w.integer(v as i64);
                }
            }
        }
    }
    Ok(())
}

/// Below this much allocated, the doctor has nothing to judge (Redis's
/// threshold).
const DOCTOR_MIN_ALLOCATED: u64 = 5 << 20;
/// Ratios and sizes past which the doctor reports a problem (Redis's).
const PEAK_RATIO: f64 = 1.5;
const TOTAL_RSS_RATIO: f64 = 1.4;
const ALLOCATOR_RATIO: f64 = 1.1;
const OVERHEAD_BYTES: u64 = 10 << 20;
const CLIENT_BUFFER_BYTES: u64 = 200 << 10;

fn doctor(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let m = crate::memory::sample();
    let report = if m.allocated < DOCTOR_MIN_ALLOCATED {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector \
         can't be used in these conditions. Please, leave for your mission on Earth and fill it \
         with some data. The new Sam and I will be back to our programming as soon as I \
         finished rebooting."
            .to_string()
    } else {
        let server = ctx.server;
        let clients = server.clients.count().max(1) as u64;
        let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
        let checks = [
            (
                ratio(m.peak, m.allocated) > PEAK_RATIO,
                "Peak memory: in the past this instance used more than 150% of the memory it \
                 uses now. jemalloc keeps some pages after a peak, so RSS may stay high; they are \
                 used again as data grows, and MEMORY PURGE returns them to the system.",
            ),
            (
                ratio(m.resident, m.allocated) > TOTAL_RSS_RATIO
                    && m.resident.saturating_sub(m.allocated) > OVERHEAD_BYTES,
                "High total RSS: the resident set is more than 1.4 times what keel has \
                 allocated, after a peak (see above) or from a workload that fragments memory. \
                 The allocator is \"jemalloc\".",
            ),
            (
                ratio(m.active, m.allocated) > ALLOCATOR_RATIO
                    && m.active.saturating_sub(m.allocated) > OVERHEAD_BYTES,
                "High allocator fragmentation: jemalloc's active pages hold more than 1.1 times \
                 the bytes allocated in them, usually after a peak.",
            ),
            (
                ratio(m.resident, m.active) > ALLOCATOR_RATIO
                    && m.resident.saturating_sub(m.active) > OVERHEAD_BYTES,
                "High allocator RSS overhead: jemalloc keeps more than 1.1 times its active \
                 pages resident; MEMORY PURGE gives the rest back.",
            ),
            (
                server.client_budget.used() as u64 / clients > CLIENT_BUFFER_BYTES,
                "Big client buffers: connections hold more than 200K of buffers each on \
                 average: subscribers that read slowly, big replies, or long pipelines. CLIENT \
                 LIST shows which.",
            ),
        ];
        let issues: Vec<&str> = checks
            .iter()
            .filter(|(found, _)| *found)
            .map(|(_, text)| *text)
            .collect();
        if issues.is_empty() {
            "Hi Sam, I can't find any memory issue in your instance. I can only account for \
             what occurs on this base."
                .to_string()
        } else {
            let mut report =
                "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
                    .to_string();
            for issue in issues {
                report.push_str(&format!(" * {issue}\n\n"));
            }
            report.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
            report
        }
    };
    ctx.w().verbatim(b"txt", report.as_bytes());
    Ok(())
}

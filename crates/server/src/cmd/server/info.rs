//! INFO [section ...] — the server's state as `field:value` lines grouped
//! in `# Section`s, with Redis's field names wherever the field applies, so
//! dashboards and exporters written for Redis read keel unchanged. Fields
//! that are keel's own start with `keel_`.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::config::format_percentile;
use crate::server::Server;
use crate::stats::{every_series, Series};

use crate::cmd::context::REDIS_COMPAT_VERSION;
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// INFO.
pub const SPEC: Spec = Spec {
    name: "info",
    arity: -1,
    flags: &["loading", "stale"],
    acl: &["@slow", "@dangerous"],
    group: "server",
    summary: "Get information and statistics about the server",
    run,
    ..BASE
};

/// Sections in the order INFO prints them, and whether a plain INFO
/// includes them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("errorstats", true),
    ("commandstats", false),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let asked: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let text = render(ctx.server, &asked, ctx.now_ms);
    ctx.w().verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// The INFO text for the `asked` sections (lowercase; empty means the
/// default set; "all" and "everything" mean every section).
pub fn render(server: &Server, asked: &[String], now_ms: u64) -> String {
    let wanted = |name: &str, default: bool| {
        if asked.is_empty() {
            return default;
        }
        asked.iter().any(|a| match a.as_str() {
            "all" | "everything" => true,
            "default" => default,
            other => other == name,
        })
    };
    let mut out = String::new();
    for &(name, default) in SECTIONS {
        if !wanted(name, default) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let title = format!("{}{}", name[..1].to_ascii_uppercase(), &name[1..]);
        let _ = write!(out, "# {title}\r\n");
        let fields = section(server, name, now_ms);
        for (k, v) in fields {
            let _ = write!(out, "{k}:{v}\r\n");
        }
    }
    out
}

/// `1.50M`-style sizes, as Redis's `bytesToHuman`.
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    const UNITS: [(&str, f64); 5] = [
        ("P", 1024f64 * 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("T", 1024f64 * 1024.0 * 1024.0 * 1024.0),
        ("G", 1024f64 * 1024.0 * 1024.0),
        ("M", 1024f64 * 1024.0),
        ("K", 1024f64),
    ];
    for (unit, size) in UNITS {
        if b >= size {
            return format!("{:.2}{unit}", b / size);
        }
    }
    format!("{bytes}B")
}

fn section(server: &Server, name: &str, now_ms: u64) -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| f.push((k.to_string(), v));
    let stats = &server.stats;
    let config = server.config.read().clone();
    match name {
        "server" => {
            let uptime = now_ms.saturating_sub(server.started_ms) / 1000;
            put("redis_version", REDIS_COMPAT_VERSION.into());
            put("keel_version", env!("CARGO_PKG_VERSION").into());
            put("redis_git_sha1", "00000000".into());
            put("redis_git_dirty", "0".into());
            put("redis_build_id", "0".into());
            put("redis_mode", "standalone".into());
            put(
                "os",
                format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            );
            put("arch_bits", (usize::BITS).to_string());
            put("multiplexing_api", "epoll".into());
            put("process_id", std::process::id().to_string());
            put("process_supervised", "no".into());
            put("run_id", server.run_id.clone());
            put("tcp_port", server.port.load(Ordering::Relaxed).to_string());
            put("server_time_usec", (now_ms * 1000).to_string());
            put("uptime_in_seconds", uptime.to_string());
            put("uptime_in_days", (uptime / 86_400).to_string());
            put("hz", "10".into());
            put("configured_hz", "10".into());
            put(
                "lru_clock",
                (server.store.clock().micros / 1_000_000).to_string(),
            );
            put(
                "executable",
                std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            );
            put(
                "config_file",
                config.config_file.clone().unwrap_or_default(),
            );
            put("io_threads_active", "0".into());
            put("keel_threads", config.threads.to_string());
        }
        "clients" => {
            put("connected_clients", server.clients.count().to_string());
            put("cluster_connections", "0".into());
            put("maxclients", config.maxclients.to_string());
            let blocked = server.blocking.blocked() + server.pause.held();
            put("blocked_clients", blocked.to_string());
            put("tracking_clients", "0".into());
            put("clients_in_timeout_table", "0".into());
        }
        "memory" => {
            let m = crate::memory::sample();
            let dataset = server.store.dataset_bytes() as u64;
            let clients = server.client_budget.used() as u64;
            let maxmemory = config.maxmemory;
            put("used_memory", m.allocated.to_string());
            put("used_memory_human", human(m.allocated));
            put("used_memory_rss", m.resident.to_string());
            put("used_memory_rss_human", human(m.resident));
            put("used_memory_peak", m.peak.to_string());
            put("used_memory_peak_human", human(m.peak));
            put(
                "used_memory_peak_perc",
                format!("{:.2}%", 100.0 * m.allocated as f64 / m.peak.max(1) as f64),
            );
            put(
                "used_memory_overhead",
                m.allocated.saturating_sub(dataset).to_string(),
            );
            put("used_memory_startup", m.startup.to_string());
            put("used_memory_dataset", dataset.to_string());
            put(
                "used_memory_dataset_perc",
                format!("{:.2}%", 100.0 * dataset as f64 / m.allocated.max(1) as f64),
            );
            put("allocator_allocated", m.allocated.to_string());
            put("allocator_active", m.active.to_string());
            put("allocator_resident", m.resident.to_string());
            put(
                "allocator_frag_ratio",
                format!("{:.2}", m.active as f64 / m.allocated.max(1) as f64),
            );
            put(
                "allocator_frag_bytes",
                m.active.saturating_sub(m.allocated).to_string(),
            );
            put("total_system_memory", m.system.to_string());
            put("total_system_memory_human", human(m.system));
            let scripts = server.scripting.memory();
            let vm_total = (scripts.eval_heap + scripts.functions_heap) as u64;
            let scripts_bytes = (scripts.scripts_bytes + scripts.functions_bytes) as u64;
            put("used_memory_lua", scripts.eval_heap.to_string());
            put("used_memory_vm_eval", scripts.eval_heap.to_string());
            put("used_memory_lua_human", human(scripts.eval_heap as u64));
            put(
                "used_memory_scripts_eval",
                scripts.scripts_bytes.to_string(),
            );
            put(
                "number_of_cached_scripts",
                scripts.cached_scripts.to_string(),
            );
            put("number_of_functions", scripts.functions.to_string());
            put("number_of_libraries", scripts.libraries.to_string());
            put(
                "used_memory_vm_functions",
                scripts.functions_heap.to_string(),
            );
            put("used_memory_vm_total", vm_total.to_string());
            put("used_memory_vm_total_human", human(vm_total));
            put("used_memory_functions", scripts.functions_bytes.to_string());
            put("used_memory_scripts", scripts_bytes.to_string());
            put("used_memory_scripts_human", human(scripts_bytes));
            put("maxmemory", maxmemory.to_string());
            put("maxmemory_human", human(maxmemory));
            put("maxmemory_policy", config.maxmemory_policy.name().into());
            put(
                "mem_fragmentation_ratio",
                format!("{:.2}", m.resident as f64 / m.allocated.max(1) as f64),
            );
            put(
                "mem_fragmentation_bytes",
                (m.resident as i64 - m.allocated as i64).to_string(),
            );
            let (_, backlog_bytes) = server.replication.backlog.held();
            put("mem_clients_slaves", "0".into());
            put("mem_replication_backlog", backlog_bytes.to_string());
            put("mem_clients_normal", clients.to_string());
            put(
                "maxmemory_clients",
                server.client_budget.limit().to_string(),
            );
            put("mem_allocator", "jemalloc-5.3.0".into());
            put(
                "active_defrag_running",
                crate::defrag::report().running.to_string(),
            );
            let lazyfree = crate::lazyfree::pending();
            put("lazyfree_pending_objects", lazyfree.objects.to_string());
            put("lazyfree_pending_bytes", lazyfree.bytes.to_string());
            put("lazyfreed_objects", lazyfree.freed.to_string());
        }
        "persistence" => {
            let now_secs = now_ms / 1000;
            let loading = server.persistence.loading.status();
            put("loading", u8::from(loading.is_some()).to_string());
            put("async_loading", "0".into());
            if let Some(l) = loading {
                let perc = 100.0 * l.loaded_bytes as f64 / l.total_bytes.max(1) as f64;
                let elapsed = now_secs.saturating_sub(l.started);
                let eta = match l.loaded_bytes {
                    0 => 1,
                    done => elapsed * l.total_bytes.saturating_sub(done) / done,
                };
                put("loading_start_time", l.started.to_string());
                put("loading_total_bytes", l.total_bytes.to_string());
                put("loading_rdb_used_mem", "0".into());
                put("loading_loaded_bytes", l.loaded_bytes.to_string());
                put("loading_loaded_perc", format!("{perc:.2}"));
                put("loading_eta_seconds", eta.to_string());
            }
            let p = server.persistence.status(now_secs);
            let seconds = |s: Option<u64>| s.map_or("-1".into(), |s| s.to_string());
            put("current_cow_peak", "0".into());
            put("current_cow_size", "0".into());
            put("current_cow_size_age", "0".into());
            put("current_fork_perc", "0.00".into());
            put("current_save_keys_processed", "0".into());
            put("current_save_keys_total", "0".into());
            put("rdb_changes_since_last_save", p.dirty.to_string());
            put(
                "rdb_bgsave_in_progress",
                u8::from(p.bgsave_in_progress).to_string(),
            );
            put("rdb_last_save_time", p.last_save.to_string());
            let status = if p.last_bgsave_ok { "ok" } else { "err" };
            put("rdb_last_bgsave_status", status.into());
            put("rdb_last_bgsave_time_sec", seconds(p.last_bgsave_secs));
            put(
                "rdb_current_bgsave_time_sec",
                seconds(p.current_bgsave_secs),
            );
            put("rdb_saves", p.saves.to_string());
            put("rdb_last_cow_size", "0".into());
            put(
                "rdb_last_load_keys_expired",
                p.last_load.expired.to_string(),
            );
            put("rdb_last_load_keys_loaded", p.last_load.loaded.to_string());
            put(
                "keel_rdb_last_load_keys_evicted",
                p.last_load.evicted.to_string(),
            );
            put(
                "keel_rdb_last_load_keys_dropped",
                p.last_load.dropped.to_string(),
            );
            put(
                "keel_snapshot_bytes",
                server.store.snapshot_bytes().to_string(),
            );
            put("aof_enabled", "0".into());
            put("aof_rewrite_in_progress", "0".into());
            put("aof_last_write_status", "ok".into());
        }
        "stats" => {
            let t = stats.totals();
            put(
                "total_connections_received",
                t.connections_received.to_string(),
            );
            put("total_commands_processed", t.commands.to_string());
            put(
                "instantaneous_ops_per_sec",
                stats.instantaneous_ops().to_string(),
            );
            put("total_net_input_bytes", t.net_input_bytes.to_string());
            put("total_net_output_bytes", t.net_output_bytes.to_string());
            put("rejected_connections", t.rejected_connections.to_string());
            let r = &server.replication;
            put(
                "sync_full",
                r.syncs_served.load(Ordering::Relaxed).to_string(),
            );
            let continued = r.partial_syncs_served.load(Ordering::Relaxed);
            put("sync_partial_ok", continued.to_string());
            let refused = r.partial_syncs_refused.load(Ordering::Relaxed);
            put("sync_partial_err", refused.to_string());
            put("expired_keys", server.store.expired_keys().to_string());
            let dataset = server.store.dataset_bytes().max(1) as f64;
            let stale = server.store.stale_bytes() as f64;
            put(
                "expired_stale_perc",
                format!("{:.2}", 100.0 * stale / dataset),
            );
            put("expired_time_cap_reached_count", "0".into());
            put(
                "expire_cycle_cpu_milliseconds",
                (t.expire_cycle_usec / 1000).to_string(),
            );
            put(
                "expire_lag_ms_max",
                server.store.expire_lag_ms_max(now_ms).to_string(),
            );
            put("evicted_keys", server.store.evicted_keys().to_string());
            put(
                "evicted_scripts",
                server.scripting.memory().evicted_scripts.to_string(),
            );
            put(
                "keel_scripts_undeclared_keys",
                (server.scripting.undeclared_keys)
                    .load(Ordering::Relaxed)
                    .to_string(),
            );
            put("evicted_clients", "0".into());
            // Every key is one entry block, so a key is hit when its block
            // moves.
            let defrag = crate::defrag::report();
            put("active_defrag_hits", defrag.hits.to_string());
            put("active_defrag_misses", defrag.misses.to_string());
            put("active_defrag_key_hits", defrag.hits.to_string());
            put("active_defrag_key_misses", defrag.misses.to_string());
            put("eviction_cpu_usec", t.eviction_usec.to_string());
            put(
                "backpressure_paused_clients",
                server.client_budget.paused().to_string(),
            );
            put(
                "backpressure_events",
                server.client_budget.pause_events().to_string(),
            );
            put("heavy_lane_waits", t.heavy_lane_waits.to_string());
            put(
                "client_output_buffer_limit_disconnections",
                t.output_limit_disconnections.to_string(),
            );
            put("keyspace_hits", t.keyspace_hits.to_string());
            put("keyspace_misses", t.keyspace_misses.to_string());
            let active = |kind| server.pubsub.active_channels(kind, None).len().to_string();
            put("pubsub_channels", active(crate::pubsub::Kind::Channel));
            put("pubsub_patterns", server.pubsub.pattern_count().to_string());
            put("pubsubshard_channels", active(crate::pubsub::Kind::Shard));
            put("latest_fork_usec", "0".into());
            // MIGRATE opens a connection each time; none is kept.
            put("migrate_cached_sockets", "0".into());
            put("total_error_replies", t.error_replies.to_string());
            // Redis 7.2's fields: denials and failed logins since start.
            let denied = &server.acl.denied;
            let count = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed).to_string();
            put("acl_access_denied_auth", count(&denied.auth));
            put("acl_access_denied_cmd", count(&denied.command));
            put("acl_access_denied_key", count(&denied.key));
            put("acl_access_denied_channel", count(&denied.channel));
        }
        "replication" => {
            let r = server.replication.status();
            let offset = r.offset.to_string();
            match &r.primary {
                Some(primary) => {
                    use crate::replication::LinkState;
                    let up = r.link.state == LinkState::Connected;
                    put("role", "slave".into());
                    put("master_host", primary.host.clone());
                    put("master_port", primary.port.to_string());
                    put("master_link_status", if up { "up" } else { "down" }.into());
                    let since_io = (now_ms / 1000).saturating_sub(r.link.last_io);
                    let last_io = if r.link.last_io == 0 {
                        -1
                    } else {
                        since_io as i64
                    };
                    put("master_last_io_seconds_ago", last_io.to_string());
                    let syncing = r.link.state == LinkState::Sync;
                    put("master_sync_in_progress", u8::from(syncing).to_string());
                    put("slave_read_repl_offset", offset.clone());
                    put("slave_repl_offset", offset.clone());
                    if let Some(since) = r.link.down_since {
                        let down = (now_ms / 1000).saturating_sub(since);
                        put("master_link_down_since_seconds", down.to_string());
                    }
                    put("slave_priority", config.value("replica-priority"));
                    let read_only = config.value("replica-read-only") == "yes";
                    put("slave_read_only", u8::from(read_only).to_string());
                    put("replica_announced", "1".into());
                }
                None => put("role", "master".into()),
            }
            let backlog = &server.replication.backlog;
            let replicas = backlog.replicas();
            put("connected_slaves", replicas.len().to_string());
            let min_replicas = config.value("min-replicas-to-write");
            if min_replicas != "0" {
                let max_lag = config.value("min-replicas-max-lag").parse().unwrap_or(10);
                let good = backlog.good_replicas(max_lag, now_ms);
                put("min_slaves_good_slaves", good.to_string());
            }
            for (i, replica) in replicas.iter().enumerate() {
                put(
                    &format!("slave{i}"),
                    format!(
                        "ip={},port={},state={},offset={},lag={}",
                        replica.ip,
                        replica.port,
                        replica.state().name(),
                        replica.acked.load(Ordering::Relaxed),
                        replica.lag_seconds(now_ms)
                    ),
                );
            }
            put("master_failover_state", "no-failover".into());
            put("master_replid", r.replid);
            put("master_replid2", r.replid2);
            put("master_repl_offset", offset);
            let second = r.second_offset.map_or(-1, |o| o as i64);
            put("second_repl_offset", second.to_string());
            let (start, held) = backlog.held();
            let active = backlog.active();
            put("repl_backlog_active", u8::from(active).to_string());
            put("repl_backlog_size", config.value("repl-backlog-size"));
            let first = if active { start + 1 } else { 0 };
            put("repl_backlog_first_byte_offset", first.to_string());
            put("repl_backlog_histlen", held.to_string());
        }
        "cpu" => {
            let (user, sys) = crate::memory::cpu_seconds();
            put("used_cpu_sys", format!("{sys:.6}"));
            put("used_cpu_user", format!("{user:.6}"));
        }
        "errorstats" => {
            for (code, count) in server.stats.errors() {
                put(&format!("errorstat_{code}"), format!("count={count}"));
            }
        }
        "cluster" => {
            put(
                "cluster_enabled",
                u8::from(server.cluster.is_some()).to_string(),
            );
            if let Some(cluster) = &server.cluster {
                // keel's own: how the keys spread over the slots served here.
                let view = cluster.view();
                let counts = server
                    .store
                    .db(0, now_ms)
                    .keys_per_slot(keel_topology::SLOTS);
                let with_keys = counts.iter().filter(|&&n| n > 0).count();
                let (busiest, most) = (counts.iter().enumerate())
                    .max_by_key(|&(_, &n)| n)
                    .map_or((0, 0), |(slot, &n)| (slot, n));
                put("cluster_slots_served", view.me().slot_count().to_string());
                put("cluster_slots_with_keys", with_keys.to_string());
                put(
                    "cluster_slot_keys_max",
                    format!("slot={busiest},keys={most}"),
                );
            }
        }
        "keyspace" => {
            for index in 0..server.store.databases() {
                let s = server.store.db(index, now_ms).stats();
                if s.keys > 0 {
                    put(
                        &format!("db{index}"),
                        format!(
                            "keys={},expires={},avg_ttl={}",
                            s.keys, s.expires, s.avg_ttl_ms
                        ),
                    );
                }
            }
        }
        "commandstats" => {
            for (spec, c) in server.commands.specs().iter().zip(stats.commands()) {
                let (calls, usec) = (c.calls, c.usec);
                let (rejected, failed) = (c.rejected_calls, c.failed_calls);
                if calls + rejected + failed == 0 {
                    continue;
                }
                put(
                    &format!("cmdstat_{}", spec.name),
                    format!(
                        "calls={calls},usec={usec},usec_per_call={:.2},rejected_calls={rejected},failed_calls={failed}",
                        usec as f64 / calls.max(1) as f64
                    ),
                );
            }
        }
        "latencystats" => {
            let percentiles = &config.latency_tracking_info_percentiles;
            // Commands' lines only while tracking is on, as in Redis;
            // background work is always tracked.
            let shown = every_series(&server.commands).filter(|(_, series)| {
                stats.latency_tracking() || matches!(series, Series::Work(_))
            });
            for (name, series) in shown {
                let snapshot = stats.latency(series);
                if snapshot.count() == 0 {
                    continue;
                }
                let values: Vec<String> = percentiles
                    .iter()
                    .map(|&p| {
                        let usec = snapshot.percentile(p) as f64;
                        format!("p{}={usec:.3}", format_percentile(p))
                    })
                    .collect();
                put(
                    &format!("latency_percentiles_usec_{name}"),
                    values.join(","),
                );
            }
        }
        _ => {}
    }
    f
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn human_sizes() {
        assert_eq!(human(512), "512B");
        assert_eq!(human(1536), "1.50K");
        assert_eq!(human(1 << 30), "1.00G");
    }
}

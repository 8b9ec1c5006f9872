//! Prometheus metrics: an optional HTTP listener (`metrics-port`) that
//! answers `GET /metrics` in the text exposition format 0.0.4.
//!
//! Every figure is read from the source INFO reads it from (the
//! statistics, the keyspace, the client budget, the allocator), so a
//! scrape and an INFO taken together agree. Latency histograms are
//! exported with the buckets LATENCY HISTOGRAM reports, converted to
//! seconds, so a dashboard and the command show the same distribution.
//!
//! The responder is deliberately tiny rather than a web framework: one
//! request per connection, its head read up to a small limit within a
//! time limit, answered, and the connection closed. Anything it cannot
//! parse gets a 400; it never panics on what a client sends. It runs on the
//! main thread's event loop beside the acceptors, never on a worker.

use std::fmt::{Display, Write as _};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::latency::Snapshot;
use crate::server::{unix_ms, Server};
use crate::stats::{Series, Work};
use crate::warning;

/// The largest request head read; a longer one is refused.
const REQUEST_HEAD_LIMIT: usize = 8 * 1024;

/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Content type of the text exposition format.
const EXPOSITION_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Content type of error replies.
const PLAIN_TYPE: &str = "text/plain; charset=utf-8";

/// Accepts scrapes on `listener` until shutdown.
pub async fn serve(server: Arc<Server>, listener: TcpListener) {
    let mut shutdown = server.shutdown_signal();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.wait_for(|&s| s) => return,
        };
        match accepted {
            Ok((socket, _)) => {
                tokio::spawn(respond(server.clone(), socket));
            }
            Err(e) => {
                warning!("Accepting metrics connection: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Reads one request, answers it and closes the connection.
async fn respond(server: Arc<Server>, mut socket: TcpStream) {
    let head = match tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut socket)).await {
        Ok(Ok(head)) => head,
        _ => return,
    };
    let response = answer(&server, &head);
    let _ = socket.write_all(&response).await;
    let _ = socket.shutdown().await;
}

/// Reads until the blank line that ends a request head, the limit, or the
/// end of the stream.
async fn read_head(socket: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < REQUEST_HEAD_LIMIT {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    Ok(head)
}

/// The whole HTTP response to the request whose head is `head`.
fn answer(server: &Server, head: &[u8]) -> Vec<u8> {
    let request_line = head
        .split(|&b| b == b'\n')
        .next()
        .filter(|_| head.contains(&b'\n'))
        .and_then(|line| std::str::from_utf8(line).ok())
        .map(|line| line.trim_end_matches('\r'));
    let words: Vec<&str> = request_line.unwrap_or("").split(' ').collect();
    let (status, content_type, body) = match words[..] {
        [method, target, version] if version.starts_with("HTTP/") => {
            let path = target.split('?').next().unwrap_or(target);
            match (method, path) {
                ("GET", "/metrics") => ("200 OK", EXPOSITION_TYPE, render(server)),
                ("GET", _) => (
                    "404 Not Found",
                    PLAIN_TYPE,
                    "Not found: try /metrics\n".into(),
                ),
                _ => (
                    "405 Method Not Allowed",
                    PLAIN_TYPE,
                    "Only GET is served\n".into(),
                ),
            }
        }
        _ => ("400 Bad Request", PLAIN_TYPE, "Bad request\n".into()),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    response.push_str(&body);
    response.into_bytes()
}

/// Text in the exposition format, one metric family at a time.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    /// Starts a family: its HELP and TYPE lines.
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample of the current family.
    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            let pairs: Vec<String> = labels
                .iter()
                .map(|(label, value)| format!("{label}=\"{}\"", escape(value)))
                .collect();
            let _ = write!(self.text, "{{{}}}", pairs.join(","));
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// A family with a single unlabelled sample.
    fn single(&mut self, name: &str, kind: &str, help: &str, value: impl Display) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// The samples of one histogram of the current family: cumulative
    /// buckets with their bound in seconds, `+Inf`, sum and count.
    fn histogram(&mut self, name: &str, label: (&str, &str), snapshot: &Snapshot) {
        let bucket = format!("{name}_bucket");
        for b in snapshot.buckets() {
            let le = seconds(b.bound_usec).to_string();
            self.sample(&bucket, &[label, ("le", &le)], b.cumulative);
        }
        self.sample(&bucket, &[label, ("le", "+Inf")], snapshot.count());
        self.sample(
            &format!("{name}_sum"),
            &[label],
            seconds(snapshot.sum_usec()),
        );
        self.sample(&format!("{name}_count"), &[label], snapshot.count());
    }
}

fn seconds(usec: u64) -> f64 {
    usec as f64 / 1e6
}

/// A label value escaped as the format requires.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Every metric, from the sources INFO reads.
fn render(server: &Server) -> String {
    let now_ms = unix_ms();
    let stats = &server.stats;
    let totals = stats.totals();
    let memory = crate::memory::sample();
    let dataset = server.store.dataset_bytes() as u64;
    let mut out = Exposition::default();
    out.single(
        "keel_memory_used_bytes",
        "gauge",
        "Bytes allocated (INFO used_memory).",
        memory.allocated,
    );
    out.single(
        "keel_memory_dataset_bytes",
        "gauge",
        "Bytes of keys, values, their metadata and tables (INFO used_memory_dataset).",
        dataset,
    );
    out.single(
        "keel_memory_overhead_bytes",
        "gauge",
        "Bytes allocated besides the dataset (INFO used_memory_overhead).",
        memory.allocated.saturating_sub(dataset),
    );
    out.single(
        "keel_memory_clients_bytes",
        "gauge",
        "Bytes of connection buffers (INFO mem_clients_normal).",
        server.client_budget.used(),
    );
    out.single(
        "keel_memory_rss_bytes",
        "gauge",
        "Resident bytes (INFO used_memory_rss).",
        memory.resident,
    );
    out.single(
        "keel_memory_max_bytes",
        "gauge",
        "maxmemory; 0 means no limit (INFO maxmemory).",
        server.config.read().maxmemory,
    );
    let databases: Vec<(String, keel_store::DbStats)> = (0..server.store.databases())
        .map(|index| (index.to_string(), server.store.db(index, now_ms).stats()))
        .collect();
    out.family(
        "keel_db_keys",
        "gauge",
        "Keys per database (INFO keyspace keys).",
    );
    for (db, s) in &databases {
        out.sample("keel_db_keys", &[("db", db)], s.keys);
    }
    out.family(
        "keel_db_expiring_keys",
        "gauge",
        "Keys with a TTL per database (INFO keyspace expires).",
    );
    for (db, s) in &databases {
        out.sample("keel_db_expiring_keys", &[("db", db)], s.expires);
    }
    if server.cluster.is_some() {
        out.family(
            "keel_cluster_slot_keys",
            "gauge",
            "Keys per hash slot on this cluster node (CLUSTER COUNTKEYSINSLOT), slots holding keys only.",
        );
        let counts = server
            .store
            .db(0, now_ms)
            .keys_per_slot(keel_topology::SLOTS);
        for (slot, &keys) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
            out.sample(
                "keel_cluster_slot_keys",
                &[("slot", &slot.to_string())],
                keys,
            );
        }
    }
    out.single(
        "keel_connected_clients",
        "gauge",
        "Client connections (INFO connected_clients).",
        server.clients.count(),
    );
    out.single(
        "keel_blocked_clients",
        "gauge",
        "Clients blocked in BLPOP and friends (INFO blocked_clients).",
        server.blocking.blocked(),
    );
    out.single(
        "keel_backpressure_paused_clients",
        "gauge",
        "Connections paused for the client budget (INFO backpressure_paused_clients).",
        server.client_budget.paused(),
    );
    out.single(
        "keel_connections_received_total",
        "counter",
        "Connections accepted (INFO total_connections_received).",
        totals.connections_received,
    );
    out.single(
        "keel_keyspace_hits_total",
        "counter",
        "Key lookups that found their key (INFO keyspace_hits).",
        totals.keyspace_hits,
    );
    out.single(
        "keel_keyspace_misses_total",
        "counter",
        "Key lookups that did not (INFO keyspace_misses).",
        totals.keyspace_misses,
    );
    out.single(
        "keel_expired_keys_total",
        "counter",
        "Keys removed as their TTL passed (INFO expired_keys).",
        server.store.expired_keys(),
    );
    out.single(
        "keel_evicted_keys_total",
        "counter",
        "Keys evicted for maxmemory (INFO evicted_keys).",
        server.store.evicted_keys(),
    );
    out.single(
        "keel_backpressure_pauses_total",
        "counter",
        "Pauses of connections for the client budget (INFO backpressure_events).",
        server.client_budget.pause_events(),
    );
    let table = &server.commands;
    let ran: Vec<(usize, u64)> = stats
        .commands()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.calls > 0)
        .map(|(id, c)| (id, c.calls))
        .collect();
    out.family(
        "keel_commands_total",
        "counter",
        "Commands run, by command (INFO commandstats calls).",
    );
    for &(id, calls) in &ran {
        out.sample(
            "keel_commands_total",
            &[("cmd", table.specs()[id].name)],
            calls,
        );
    }
    let name = "keel_command_duration_seconds";
    out.family(
        name,
        "histogram",
        "Command execution time, by command (LATENCY HISTOGRAM).",
    );
    for &(id, _) in &ran {
        let snapshot = stats.latency(Series::Command(id));
        if snapshot.count() > 0 {
            out.histogram(name, ("cmd", table.specs()[id].name), &snapshot);
        }
    }
    let name = "keel_background_work_duration_seconds";
    out.family(
        name,
        "histogram",
        "Background work time, by kind (LATENCY HISTOGRAM keel-*).",
    );
    for work in Work::ALL {
        let label = work.name().trim_start_matches("keel-");
        out.histogram(name, ("work", label), &stats.latency(Series::Work(work)));
    }
    out.text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_histograms_are_cumulative() {
        let mut out = Exposition::default();
        out.sample("m", &[("a", "x\"y\\z\n")], 1);
        assert_eq!(out.text, "m{a=\"x\\\"y\\\\z\\n\"} 1\n");
        let histogram = crate::latency::Histogram::boxed();
        histogram.record(Duration::from_micros(3));
        histogram.record(Duration::from_secs(100));
        let mut snapshot = Snapshot::default();
        snapshot.add(&histogram);
        let mut out = Exposition::default();
        out.histogram("h", ("cmd", "get"), &snapshot);
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(lines[0], "h_bucket{cmd=\"get\",le=\"0.000001\"} 0");
        assert_eq!(lines[2], "h_bucket{cmd=\"get\",le=\"0.000004\"} 1");
        assert!(lines.contains(&"h_bucket{cmd=\"get\",le=\"34.628173\"} 1"));
        assert!(lines.contains(&"h_bucket{cmd=\"get\",le=\"+Inf\"} 2"));
        assert!(lines.contains(&"h_sum{cmd=\"get\"} 100.000003"));
        assert!(lines.contains(&"h_count{cmd=\"get\"} 2"));
    }
}

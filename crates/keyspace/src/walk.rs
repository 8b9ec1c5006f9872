//! The walk: SCAN (or RANDOMKEY) for key names, then per key `OBJECT
//! IDLETIME|FREQ`, `TYPE`, `MEMORY USAGE`, `PTTL`, pipelined `--batch` keys
//! per round trip and paced to `--rate` keys per second, so the server sees
//! a steady trickle of cheap commands rather than a burst.
//!
//! `OBJECT IDLETIME` goes first in each key's group: on servers where TYPE
//! or MEMORY USAGE count as an access, the idle time is read before them.
//! A command the server lacks or refuses is dropped after its first
//! "unknown command" error and its gaps counted, so the report says what it
//! could not see instead of failing.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_resp::Frame;

use crate::cli::{Options, SampleMethod};
use crate::client::{text, ClientError, Command, Conn};
use crate::estimate::Draw;
use crate::pattern::Inferrer;
use crate::progress::Progress;
use crate::stats::{KeyStat, KeyType};

/// What the report says about the server it read.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    /// `host:port`.
    pub addr: String,
    /// `redis_version` from INFO.
    pub redis_version: Option<String>,
    /// `keel_version` from INFO, when the server is keel.
    pub keel_version: Option<String>,
    /// `maxmemory-policy`, when CONFIG GET is allowed.
    pub policy: Option<String>,
    /// DBSIZE of the selected db at the start.
    pub dbsize: u64,
}

/// Per-command counts of keys whose figure is missing, and the first
/// error text of each, so gaps are stated rather than silently zero.
#[derive(Debug, Clone, Default)]
pub struct Gaps {
    /// (command, keys without the figure, first error message).
    pub missing: Vec<(String, u64, String)>,
    /// Keys that disappeared between SCAN and inspection (expired, evicted
    /// or deleted): left out of every figure.
    pub vanished: u64,
    /// Notes on what the walk changed on the way (e.g. switched from
    /// IDLETIME to FREQ).
    pub notes: Vec<String>,
}

impl Gaps {
    fn count(&mut self, command: &str, n: u64, message: &str) {
        if let Some(e) = self.missing.iter_mut().find(|e| e.0 == command) {
            e.1 += n;
        } else {
            self.missing
                .push((command.to_string(), n, message.to_string()));
        }
    }
}

/// Everything the walk gathered, keyed by raw (not yet collapsed) pattern.
#[derive(Debug)]
pub struct Collected {
    /// The server.
    pub server: ServerInfo,
    /// How keys were chosen.
    pub draw: Draw,
    /// Keys in the walked keyspace (distinct keys seen by SCAN, or DBSIZE
    /// for RANDOMKEY sampling).
    pub population: u64,
    /// Records per raw pattern.
    pub by_pattern: HashMap<String, Vec<KeyStat>>,
    /// Under `--sample` with a SCAN pass: the raw patterns of every key
    /// seen, so the cardinality step (which counts distinct literals) sees
    /// the whole keyspace rather than the sample's thinner slice of it.
    pub all_raw_patterns: Option<HashSet<String>>,
    /// What could not be read.
    pub gaps: Gaps,
    /// Wall time of the walk.
    pub elapsed: Duration,
}

impl Collected {
    /// Keys inspected (and still present).
    pub fn inspected(&self) -> u64 {
        self.by_pattern.values().map(|v| v.len() as u64).sum()
    }
}

/// Small seeded PRNG (SplitMix64) for sampling: reproducible with `--seed`,
/// and no dependency for a few lines of arithmetic.
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by Lemire's multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Keeps a uniform random subset of fixed size of a stream of keys
/// (reservoir sampling, Algorithm R).
pub struct Reservoir {
    keep: usize,
    seen: u64,
    items: Vec<Bytes>,
}

impl Reservoir {
    /// A reservoir keeping `keep` keys.
    pub fn new(keep: usize) -> Reservoir {
        Reservoir {
            keep,
            seen: 0,
            items: Vec::with_capacity(keep.min(1 << 20)),
        }
    }

    /// Offers one key.
    pub fn offer(&mut self, key: Bytes, rng: &mut Rng) {
        self.seen += 1;
        if self.items.len() < self.keep {
            self.items.push(key);
        } else {
            let j = rng.below(self.seen) as usize;
            if j < self.keep {
                self.items[j] = key;
            }
        }
    }

    /// The kept keys.
    pub fn into_items(self) -> Vec<Bytes> {
        self.items
    }
}

/// Paces batches to a keys-per-second budget.
struct Pace {
    rate: u64,
    start: Instant,
    sent: u64,
}

impl Pace {
    fn new(rate: u64) -> Pace {
        Pace {
            rate,
            start: Instant::now(),
            sent: 0,
        }
    }

    async fn admit(&mut self, n: u64) {
        if self.rate > 0 {
            let due = self.start + Duration::from_secs_f64(self.sent as f64 / self.rate as f64);
            tokio::time::sleep_until(due.into()).await;
        }
        self.sent += n;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Idle,
    Freq,
}

/// Per-key inspection: builds the pipelined commands, reads the replies,
/// tracks which commands still work.
struct Inspector<'a> {
    inferrer: &'a Inferrer,
    access: Access,
    switches: u32,
    idle_ok: bool,
    freq_ok: bool,
    memory_ok: bool,
    type_ok: bool,
    ttl_ok: bool,
    memory_samples: Option<String>,
    gaps: Gaps,
    by_pattern: HashMap<String, Vec<KeyStat>>,
}

fn persistent(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("unknown command")
        || m.contains("unknown subcommand")
        || m.contains("wrong number of arguments")
        || m.contains("noperm")
        || m.contains("not allowed")
}

impl Inspector<'_> {
    fn access_on(&self) -> bool {
        match self.access {
            Access::Idle => self.idle_ok,
            Access::Freq => self.freq_ok,
        }
    }

    fn commands(&self, keys: &[Bytes]) -> Vec<Command> {
        let mut cmds = Vec::with_capacity(keys.len() * 4);
        for k in keys {
            let k = k.to_vec();
            if self.access_on() {
                let sub = match self.access {
                    Access::Idle => "IDLETIME",
                    Access::Freq => "FREQ",
                };
                cmds.push(vec![b"OBJECT".to_vec(), sub.into(), k.clone()]);
            }
            if self.type_ok {
                cmds.push(vec![b"TYPE".to_vec(), k.clone()]);
            }
            if self.memory_ok {
                let mut c = vec![b"MEMORY".to_vec(), b"USAGE".to_vec(), k.clone()];
                if let Some(s) = &self.memory_samples {
                    c.push(b"SAMPLES".to_vec());
                    c.push(s.clone().into_bytes());
                }
                cmds.push(c);
            }
            if self.ttl_ok {
                cmds.push(vec![b"PTTL".to_vec(), k]);
            }
        }
        cmds
    }

    /// Counts a failed figure; returns None. Disables the command after a
    /// persistent error, and swaps IDLETIME/FREQ when the server says the
    /// policy calls for the other one.
    fn failed(&mut self, command: &str, message: &str) -> Option<u64> {
        self.gaps.count(command, 1, message);
        let lower = message.to_ascii_lowercase();
        let wrong_mode = lower.contains("lfu maxmemory policy");
        if wrong_mode && self.switches < 2 {
            self.switches += 1;
            let (from, to) = match self.access {
                Access::Idle => ("IDLETIME", "FREQ"),
                Access::Freq => ("FREQ", "IDLETIME"),
            };
            self.access = match self.access {
                Access::Idle => Access::Freq,
                Access::Freq => Access::Idle,
            };
            self.gaps.notes.push(format!(
                "switched from OBJECT {from} to OBJECT {to} after: {message}"
            ));
        } else if persistent(message) || wrong_mode {
            match command {
                "OBJECT IDLETIME" => self.idle_ok = false,
                "OBJECT FREQ" => self.freq_ok = false,
                "MEMORY USAGE" => self.memory_ok = false,
                "TYPE" => self.type_ok = false,
                "PTTL" => self.ttl_ok = false,
                _ => {}
            }
        }
        None
    }

    async fn inspect(&mut self, conn: &mut Conn, keys: &[Bytes]) -> Result<(), ClientError> {
        if keys.is_empty() {
            return Ok(());
        }
        let (access, access_on) = (self.access, self.access_on());
        let (type_ok, memory_ok, ttl_ok) = (self.type_ok, self.memory_ok, self.ttl_ok);
        let cmds = self.commands(keys);
        let replies = conn.pipeline(&cmds).await?;
        let mut r = replies.into_iter();
        let access_name = match access {
            Access::Idle => "OBJECT IDLETIME",
            Access::Freq => "OBJECT FREQ",
        };
        for key in keys {
            let mut vanished = false;
            let access_value = if access_on {
                match r.next() {
                    Some(Frame::Integer(n)) => Some(n.max(0) as u64),
                    Some(Frame::Null) | Some(Frame::NullArray) => {
                        vanished = true;
                        None
                    }
                    Some(Frame::Error(e)) if e.contains("no such key") => {
                        vanished = true;
                        None
                    }
                    Some(Frame::Error(e)) => self.failed(access_name, &e),
                    other => self.failed(access_name, &format!("unexpected reply {other:?}")),
                }
            } else {
                self.gaps.count(access_name, 1, "not available");
                None
            };
            let kind = if type_ok {
                match r.next() {
                    Some(Frame::Error(e)) => {
                        self.failed("TYPE", &e);
                        KeyType::Other
                    }
                    Some(f) => match text(&f) {
                        Some(t) if t == "none" => {
                            vanished = true;
                            KeyType::Other
                        }
                        Some(t) => KeyType::parse(&t),
                        None => {
                            self.failed("TYPE", &format!("unexpected reply {f:?}"));
                            KeyType::Other
                        }
                    },
                    None => KeyType::Other,
                }
            } else {
                KeyType::Other
            };
            let bytes = if memory_ok {
                match r.next() {
                    Some(Frame::Integer(n)) => Some(n.max(0) as u64),
                    Some(Frame::Null) => {
                        vanished = true;
                        None
                    }
                    Some(Frame::Error(e)) => self.failed("MEMORY USAGE", &e),
                    other => self.failed("MEMORY USAGE", &format!("unexpected reply {other:?}")),
                }
            } else {
                self.gaps.count("MEMORY USAGE", 1, "not available");
                None
            };
            let ttl_ms = if ttl_ok {
                match r.next() {
                    Some(Frame::Integer(-2)) => {
                        vanished = true;
                        None
                    }
                    Some(Frame::Integer(n)) if n < 0 => None,
                    Some(Frame::Integer(n)) => Some(n as u64),
                    Some(Frame::Error(e)) => {
                        self.failed("PTTL", &e);
                        None
                    }
                    other => {
                        self.failed("PTTL", &format!("unexpected reply {other:?}"));
                        None
                    }
                }
            } else {
                None
            };
            if vanished {
                self.gaps.vanished += 1;
                continue;
            }
            let (idle, freq) = match access {
                Access::Idle => (access_value, None),
                Access::Freq => (None, access_value),
            };
            let stat = KeyStat {
                kind,
                bytes,
                idle,
                freq,
                ttl_ms,
            };
            let pattern = self.inferrer.pattern(key);
            self.by_pattern.entry(pattern).or_default().push(stat);
        }
        Ok(())
    }
}

fn seen_before(seen: &mut HashSet<u64>, key: &[u8]) -> bool {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    !seen.insert(h.finish())
}

/// One SCAN step: the next cursor and the keys.
async fn scan_step(
    conn: &mut Conn,
    cursor: &str,
    opts: &Options,
) -> Result<(String, Vec<Bytes>), ClientError> {
    let count = opts.scan_count.to_string();
    let mut args: Vec<&str> = vec!["SCAN", cursor, "COUNT", &count];
    if let Some(m) = &opts.match_glob {
        args.extend(["MATCH", m.as_str()]);
    }
    match conn.request(&args).await? {
        Frame::Array(mut parts) if parts.len() == 2 => {
            let keys = match parts.pop() {
                Some(Frame::Array(keys)) | Some(Frame::Set(keys)) => keys
                    .into_iter()
                    .filter_map(|k| match k {
                        Frame::Bulk(b) => Some(b),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let cursor = parts
                .pop()
                .as_ref()
                .and_then(text)
                .ok_or_else(|| ClientError::Protocol("SCAN cursor missing".into()))?;
            Ok((cursor, keys))
        }
        Frame::Error(e) => Err(ClientError::Server(format!("SCAN: {e}"))),
        other => Err(ClientError::Protocol(format!(
            "unexpected SCAN reply {other:?}"
        ))),
    }
}

async fn server_info(conn: &mut Conn, opts: &Options) -> Result<ServerInfo, ClientError> {
    let mut info = ServerInfo {
        addr: format!("{}:{}", opts.host, opts.port),
        ..ServerInfo::default()
    };
    if let Some(t) = text(&conn.request(&["INFO", "server"]).await?) {
        for line in t.lines() {
            if let Some(v) = line.strip_prefix("redis_version:") {
                info.redis_version = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("keel_version:") {
                info.keel_version = Some(v.trim().to_string());
            }
        }
    }
    info.policy = match conn.request(&["CONFIG", "GET", "maxmemory-policy"]).await? {
        Frame::Array(kv) => kv.get(1).and_then(text),
        Frame::Map(kv) => kv.first().and_then(|(_, v)| text(v)),
        _ => None,
    };
    match conn.request(&["DBSIZE"]).await? {
        Frame::Integer(n) => info.dbsize = n.max(0) as u64,
        Frame::Error(e) => return Err(ClientError::Server(format!("DBSIZE: {e}"))),
        _ => {}
    }
    Ok(info)
}

/// Walks the keyspace as the options say and returns the records.
pub async fn collect(opts: &Options, inferrer: &Inferrer) -> Result<Collected, ClientError> {
    let started = Instant::now();
    let mut conn = Conn::open(
        &opts.host,
        opts.port,
        opts.user.as_deref(),
        opts.password.as_deref(),
        opts.db,
        opts.timeout,
    )
    .await?;
    let server = server_info(&mut conn, opts).await?;
    let lfu = server.policy.as_deref().is_some_and(|p| p.contains("lfu"));
    let mut insp = Inspector {
        inferrer,
        access: if lfu { Access::Freq } else { Access::Idle },
        switches: 0,
        idle_ok: true,
        freq_ok: true,
        memory_ok: true,
        type_ok: true,
        ttl_ok: true,
        memory_samples: opts.memory_samples.map(|n| n.to_string()),
        gaps: Gaps::default(),
        by_pattern: HashMap::new(),
    };
    if server.policy.is_none() {
        insp.gaps.notes.push(
            "CONFIG GET maxmemory-policy refused: assumed an LRU policy (OBJECT IDLETIME)".into(),
        );
    }
    let mut rng = Rng::new(opts.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    }));
    let mut pace = Pace::new(opts.rate);
    let mut all_raw_patterns = None;
    let (draw, population) = match (opts.sample, opts.sample_method) {
        (None, _) => {
            let mut progress = Progress::new("inspecting", server.dbsize, opts.progress);
            let mut seen = HashSet::with_capacity(server.dbsize.min(1 << 26) as usize);
            let mut pending: Vec<Bytes> = Vec::with_capacity(opts.batch * 2);
            let mut cursor = "0".to_string();
            loop {
                let (next, keys) = scan_step(&mut conn, &cursor, opts).await?;
                for k in keys {
                    if !seen_before(&mut seen, &k) {
                        pending.push(k);
                    }
                }
                while pending.len() >= opts.batch {
                    let rest = pending.split_off(opts.batch);
                    pace.admit(pending.len() as u64).await;
                    insp.inspect(&mut conn, &pending).await?;
                    progress.add(pending.len() as u64);
                    pending = rest;
                }
                cursor = next;
                if cursor == "0" {
                    break;
                }
            }
            pace.admit(pending.len() as u64).await;
            insp.inspect(&mut conn, &pending).await?;
            progress.add(pending.len() as u64);
            progress.finish();
            (Draw::Exhaustive, seen.len() as u64)
        }
        (Some(n), SampleMethod::Scan) => {
            // Keys-only pass, paced at 10× --rate: a SCAN returning a key
            // costs the server far less than the four inspection commands.
            let mut scan_pace = Pace::new(opts.rate.saturating_mul(10));
            let mut progress = Progress::new("scanning", server.dbsize, opts.progress);
            let mut seen = HashSet::with_capacity(server.dbsize.min(1 << 26) as usize);
            let mut reservoir = Reservoir::new(n as usize);
            let mut raw_patterns = HashSet::new();
            let mut cursor = "0".to_string();
            loop {
                let (next, keys) = scan_step(&mut conn, &cursor, opts).await?;
                scan_pace.admit(keys.len() as u64).await;
                progress.add(keys.len() as u64);
                for k in keys {
                    if !seen_before(&mut seen, &k) {
                        if opts.max_literals > 0 {
                            raw_patterns.insert(inferrer.pattern(&k));
                        }
                        reservoir.offer(k, &mut rng);
                    }
                }
                cursor = next;
                if cursor == "0" {
                    break;
                }
            }
            progress.finish();
            all_raw_patterns = Some(raw_patterns);
            let population = seen.len() as u64;
            drop(seen);
            let keys = reservoir.into_items();
            let mut progress = Progress::new("inspecting", keys.len() as u64, opts.progress);
            for chunk in keys.chunks(opts.batch) {
                pace.admit(chunk.len() as u64).await;
                insp.inspect(&mut conn, chunk).await?;
                progress.add(chunk.len() as u64);
            }
            progress.finish();
            let draw = if population <= n {
                Draw::Exhaustive
            } else {
                Draw::WithoutReplacement
            };
            (draw, population)
        }
        (Some(n), SampleMethod::RandomKey) => {
            let mut progress = Progress::new("sampling", n, opts.progress);
            let mut left = n;
            while left > 0 {
                let take = left.min(opts.batch as u64);
                let cmds: Vec<Command> = (0..take).map(|_| vec![b"RANDOMKEY".to_vec()]).collect();
                let replies = conn.pipeline(&cmds).await?;
                let mut keys = Vec::with_capacity(take as usize);
                for f in replies {
                    match f {
                        Frame::Bulk(b) => keys.push(b),
                        Frame::Error(e) => {
                            return Err(ClientError::Server(format!("RANDOMKEY: {e}")))
                        }
                        _ => {}
                    }
                }
                if keys.is_empty() {
                    break; // empty database
                }
                pace.admit(keys.len() as u64).await;
                insp.inspect(&mut conn, &keys).await?;
                progress.add(take);
                left -= take;
            }
            progress.finish();
            (Draw::WithReplacement, server.dbsize)
        }
    };
    Ok(Collected {
        server,
        draw,
        population,
        by_pattern: insp.by_pattern,
        all_raw_patterns,
        gaps: insp.gaps,
        elapsed: started.elapsed(),
    })
}

/// Walks every primary of the cluster when `opts` names a cluster node
/// (each primary with its share of `--sample`, in proportion to its keys),
/// else the one server, and merges what they hold into one report.
pub async fn collect_all(opts: &Options, inferrer: &Inferrer) -> Result<Collected, ClientError> {
    let Some(primaries) = cluster_primaries(opts).await? else {
        return collect(opts, inferrer).await;
    };
    let total: u64 = primaries.iter().map(|p| p.2).sum();
    let started = Instant::now();
    let mut merged: Option<Collected> = None;
    for (host, port, keys) in &primaries {
        let mut node = opts.clone();
        (node.host, node.port) = (host.clone(), *port);
        if let Some(n) = opts.sample {
            node.sample = Some((n * keys).div_ceil(total.max(1)).max(1));
        }
        let walked = collect(&node, inferrer).await?;
        merged = Some(match merged {
            None => walked,
            Some(so_far) => merge(so_far, walked),
        });
    }
    let mut merged = merged
        .ok_or_else(|| ClientError::Server("the cluster has no primary serving slots".into()))?;
    merged.server.addr = format!(
        "{} primaries of the cluster of {}:{}",
        primaries.len(),
        opts.host,
        opts.port
    );
    merged.elapsed = started.elapsed();
    Ok(merged)
}

/// The primaries serving slots (host, port, DBSIZE) when `opts` names a
/// cluster node; `None` for a server outside cluster mode.
async fn cluster_primaries(opts: &Options) -> Result<Option<Vec<(String, u16, u64)>>, ClientError> {
    let mut conn = open_node(opts, &opts.host, opts.port).await?;
    let info = text(&conn.request(&["INFO", "cluster"]).await?).unwrap_or_default();
    if !info.lines().any(|l| l.trim() == "cluster_enabled:1") {
        return Ok(None);
    }
    let nodes = text(&conn.request(&["CLUSTER", "NODES"]).await?).unwrap_or_default();
    let mut primaries = Vec::new();
    for line in nodes.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let serving =
            fields.len() > 8 && fields[2].contains("master") && !fields[2].contains("fail");
        let address = fields.get(1).and_then(|a| a.split(['@', ',']).next());
        let Some((host, port)) = address.filter(|_| serving).and_then(|a| a.rsplit_once(':'))
        else {
            continue;
        };
        let host = if host.is_empty() {
            opts.host.clone()
        } else {
            host.to_string()
        };
        let port: u16 = port
            .parse()
            .map_err(|_| ClientError::Protocol(format!("CLUSTER NODES: bad address {line}")))?;
        let keys = match open_node(opts, &host, port)
            .await?
            .request(&["DBSIZE"])
            .await?
        {
            Frame::Integer(n) => n.max(0) as u64,
            other => {
                return Err(ClientError::Server(format!(
                    "DBSIZE on {host}:{port}: {other:?}"
                )))
            }
        };
        primaries.push((host, port, keys));
    }
    Ok(Some(primaries))
}

/// A connection to `host:port` with `opts`'s credentials, database 0.
async fn open_node(opts: &Options, host: &str, port: u16) -> Result<Conn, ClientError> {
    let (user, password) = (opts.user.as_deref(), opts.password.as_deref());
    Conn::open(host, port, user, password, 0, opts.timeout).await
}

/// One report of two primaries' walks.
fn merge(mut into: Collected, other: Collected) -> Collected {
    into.server.dbsize += other.server.dbsize;
    into.population += other.population;
    for (pattern, stats) in other.by_pattern {
        into.by_pattern.entry(pattern).or_default().extend(stats);
    }
    if let (Some(all), Some(more)) = (&mut into.all_raw_patterns, other.all_raw_patterns) {
        all.extend(more);
    }
    for (command, n, message) in other.gaps.missing {
        into.gaps.count(&command, n, &message);
    }
    into.gaps.vanished += other.gaps.vanished;
    for note in other.gaps.notes {
        if !into.gaps.notes.contains(&note) {
            into.gaps.notes.push(note);
        }
    }
    into
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservoir_is_uniform_enough() {
        // 10 keys, keep 3, 30,000 runs: each key kept ~9,000 times.
        let mut rng = Rng::new(7);
        let mut hits = [0u32; 10];
        for _ in 0..30_000 {
            let mut r = Reservoir::new(3);
            for i in 0..10u8 {
                r.offer(Bytes::from(vec![i]), &mut rng);
            }
            for k in r.into_items() {
                hits[k[0] as usize] += 1;
            }
        }
        for h in hits {
            assert!((8_500..9_500).contains(&h), "{hits:?}");
        }
    }

    #[test]
    fn rng_below_stays_in_range() {
        let mut rng = Rng::new(1);
        assert!((0..1000).all(|_| rng.below(7) < 7));
    }
}

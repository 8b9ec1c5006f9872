//! Reading an RDB file into the keyspace: at start-up (on a thread, while
//! clients get `-LOADING`) and for DEBUG RELOAD.
//!
//! The file is streamed (`keel_rdb::file::Reader`), never read whole. Keys
//! whose TTL passed are skipped, as a Redis primary skips them. Each key
//! first makes room for itself under `maxmemory` as a write would
//! ([`Room::grow_evicting`]): the policy evicts what it chooses, and where
//! it may not evict (`noeviction`), the key is not loaded. The log and INFO
//! say how many keys went either way. A replica loads everything: its
//! primary bounds the data.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_rdb::file::{Item, Reader};

use super::values::stored;
use crate::eviction::Room;
use crate::server::{unix_ms, Server};
use crate::{notice, warning};

/// What a load did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// The replication history the file was saved at.
    pub replication: Option<crate::replication::History>,
    /// Keys put in the keyspace.
    pub loaded: u64,
    /// Keys skipped because their TTL had passed.
    pub expired: u64,
    /// Keys the policy evicted to make room for later ones.
    pub evicted: u64,
    /// Keys not loaded because nothing could be evicted for them.
    pub dropped: u64,
}

/// The most keys a file's RESIZEDB may size a database's indexes for: a
/// corrupt count must not allocate gigabytes (a key takes 5 bytes of index).
const MAX_PRESIZED_KEYS: usize = 1 << 28;

/// How often the log reports progress on a long load.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// What a key adds beyond its key and value bytes (entry header, slot,
/// index share): enough to reserve, the exact figure is counted once in.
const ENTRY_OVERHEAD: usize = 64;

/// At start-up: if `dir`/`dbfilename` exists, marks the server as loading
/// (before any client is accepted) and loads it on a thread. A file that
/// cannot be loaded stops the server: serving without it, or with part of
/// it, would look like a warm start and be a cold one.
pub fn load_at_startup(server: &Arc<Server>) -> std::io::Result<()> {
    let path = super::Settings::of(&server.config.read()).path;
    let size = match std::fs::metadata(&path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(std::io::Error::other(format!(
                "Can't open the RDB file {}: {e}",
                path.display()
            )))
        }
    };
    server.persistence.loading.begin(unix_ms() / 1000, size);
    let loader = server.clone();
    std::thread::Builder::new()
        .name("keel-load".into())
        .spawn(move || {
            let started = Instant::now();
            let result = load_marked(&loader, &path, LoadInto::Empty);
            if result.is_ok() {
                loaded(&loader, &result);
            }
            match result {
                Ok(report) => {
                    notice!(
                        "DB loaded from disk: {:.3} seconds ({})",
                        started.elapsed().as_secs_f64(),
                        describe(&report)
                    );
                    // A replica continues the history the file was saved
                    // at, so its first PSYNC can be a partial one.
                    if let Some(history) = report.replication {
                        loader.replication.resume_history(history);
                    }
                }
                Err(e) => {
                    warning!("{e}");
                    warning!("Fatal error loading the DB, check server logs. Exiting.");
                    std::process::exit(1);
                }
            }
        })?;
    Ok(())
}

fn describe(report: &Report) -> String {
    let mut text = format!(
        "keys loaded: {}, keys expired: {}",
        report.loaded, report.expired
    );
    if report.evicted + report.dropped > 0 {
        text += &format!(
            ", over maxmemory: {} evicted by the policy, {} not loaded",
            report.evicted, report.dropped
        );
    }
    text
}

/// How a load meets what the server holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadInto {
    /// Every database is emptied first, and the libraries replaced.
    Empty,
    /// Keys and libraries are added; a key already present is an error.
    Existing,
    /// Keys and libraries are added, replacing those present (DEBUG
    /// RELOAD MERGE).
    Merge,
}

/// Loads the file at `path`, with the server marked as loading meanwhile
/// (emptied first if `into` says so, while marked). The error names the
/// file, the offset and the problem.
pub fn load_file(server: &Server, path: &Path, into: LoadInto) -> Result<Report, String> {
    let result = load_marked(server, path, into);
    loaded(server, &result);
    result
}

/// Ends the loading mark of [`load_marked`], recording a load that worked.
fn loaded(server: &Server, result: &Result<Report, String>) {
    server.persistence.loading.end();
    if let Ok(report) = result {
        server.persistence.loaded(report.clone());
    }
}

/// [`load_file`], leaving the server marked as loading: at start-up a file
/// that cannot be loaded ends the process, and until it has, clients get
/// LOADING, never an empty server's replies.
fn load_marked(server: &Server, path: &Path, into: LoadInto) -> Result<Report, String> {
    let cannot_open =
        |e: std::io::Error| format!("Can't open the RDB file {}: {e}", path.display());
    let file = File::open(path).map_err(cannot_open)?;
    let size = file.metadata().map_err(cannot_open)?.len();
    let loading = &server.persistence.loading;
    loading.begin(unix_ms() / 1000, size);
    if into == LoadInto::Empty {
        flush_all(server);
    }
    let result = load(server, file, size, into)
        .map_err(|e| format!("Short read or corrupt RDB file {} {e}", path.display()));
    if result.is_err() && into == LoadInto::Empty {
        // Nothing half-loaded is served: what the file put in goes again.
        flush_all(server);
    }
    result
}

fn flush_all(server: &Server) {
    for db in 0..server.store.databases() {
        let old = server.store.db(db, unix_ms()).flush();
        crate::lazyfree::free_flushed(old, None);
    }
}

fn load(server: &Server, file: File, size: u64, into: LoadInto) -> Result<Report, String> {
    let store = &server.store;
    // What one key may take to decode: the room left under `maxmemory` (a
    // few KB of compressed or packed bytes can claim gigabytes), except on
    // a replica, which takes its primary's keys whatever their size.
    let replica = server.replication.is_replica();
    let budget = match server.room_left() {
        Some(left) if !replica => usize::try_from(left).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let fits = |room: u64| size.saturating_mul(2) < room;
    let presize = replica || server.room_left().is_none_or(fits);
    let mut reader = Reader::new(file, budget).map_err(|e| e.to_string())?;
    if !super::Settings::of(&server.config.read()).checksum {
        reader.ignore_checksum();
    }
    let limits = store.encodings.limits();
    let evicted_before = store.evicted_keys();
    let mut report = Report::default();
    let mut libraries: Vec<Bytes> = Vec::new();
    let mut db = 0;
    let (mut replid, mut repl_offset, mut stream_db) = (None, None, 0);
    let mut last_log = Instant::now();
    loop {
        let offset = reader.offset();
        let item = reader.next().map_err(|e| e.to_string())?;
        server.persistence.loading.progress(reader.offset());
        if last_log.elapsed() >= PROGRESS_EVERY {
            last_log = Instant::now();
            notice!(
                "Loading RDB: {:.0}% ({} of {} bytes)",
                100.0 * reader.offset() as f64 / size.max(1) as f64,
                reader.offset(),
                size
            );
        }
        match item {
            Item::Aux { key, value } => {
                let value = String::from_utf8_lossy(&value).into_owned();
                match &key[..] {
                    b"redis-ver" => notice!("Loading RDB produced by version {value}"),
                    b"repl-id" => replid = Some(value),
                    b"repl-offset" => repl_offset = value.parse().ok(),
                    b"repl-stream-db" => stream_db = value.parse().unwrap_or(0),
                    _ => {}
                }
            }
            Item::Functions(code) => libraries.push(code.into()),
            Item::SelectDb(n) => {
                db = usize::try_from(n)
                    .ok()
                    .filter(|&n| n < store.databases())
                    .ok_or_else(|| {
                        format!(
                            "at offset {offset}: the file has database {n}, this server is configured for {} databases",
                            store.databases()
                        )
                    })?;
            }
            // The file says how many keys follow: the indexes are sized for
            // them once rather than rebuilt as they grow, when the file
            // plainly fits (twice its size under `maxmemory`); otherwise
            // keys may be evicted as they come, and room sized for them
            // would be taken from those that stay.
            Item::ResizeDb { keys, .. } if presize => {
                let keys = usize::try_from(keys).unwrap_or(usize::MAX);
                store.db(db, unix_ms()).reserve(keys.min(MAX_PRESIZED_KEYS));
            }
            Item::ResizeDb { .. } => {}
            Item::Key { key, value, meta } => {
                let now_ms = unix_ms();
                if meta.expire_at_ms.is_some_and(|at| at <= now_ms) {
                    report.expired += 1;
                    continue;
                }
                let value = stored(value, &limits);
                let mut room = Room::empty(server);
                let bytes =
                    key.len() + value.heap_bytes() + ENTRY_OVERHEAD + store.largest_table_growth();
                // A replica loads its primary's data whole, as Redis's
                // `replica-ignore-maxmemory` has it (see `crate::replication`).
                if !replica && !room.grow_evicting(now_ms, bytes) {
                    report.dropped += 1;
                    continue;
                }
                let keyspace = store.db(db, now_ms);
                let (idle, freq) = (meta.idle_seconds, meta.lfu_freq);
                let replaced = keyspace.write(&key).insert_restored(
                    &key,
                    value,
                    meta.expire_at_ms,
                    idle,
                    freq,
                );
                if replaced.is_some() && into != LoadInto::Merge {
                    return Err(format!(
                        "at offset {offset}: duplicate key in database {db}"
                    ));
                }
                report.loaded += 1;
            }
            Item::End => break,
        }
    }
    if let Err(e) = server
        .scripting
        .load_libraries(libraries, into == LoadInto::Empty)
    {
        warning!("Function libraries in the RDB file not loaded: {e}");
    }
    report.replication =
        replid
            .zip(repl_offset)
            .map(|(replid, offset)| crate::replication::History {
                replid,
                offset,
                stream_db,
            });
    report.evicted = store.evicted_keys() - evicted_before;
    report.loaded -= report.evicted.min(report.loaded);
    Ok(report)
}

//! Writing the dataset as an RDB file: the snapshot walk (see the module
//! notes in `mod.rs` and `keel_store::snapshot`), SAVE's and BGSAVE's file
//! handling, and the `save` schedule.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_rdb::file::{KeyMeta, WriteOptions, Writer};
use keel_store::{Entry, SHARDS_PER_DB};

use super::values::{plain, thresholds};
use super::Settings;
use crate::replication::backlog::ReplicaLink;
use crate::replication::History;
use crate::server::{unix_ms, Server};
use crate::{notice, warning};

/// Slots a walk step visits under one shard's read lock: a writer to that
/// shard waits for at most this many keys to be copied out.
const SLOTS_PER_STEP: usize = 128;

/// Bytes buffered before they go to the file.
const WRITE_BUFFER: usize = 1 << 20;

/// How soon a failed background save is retried by the schedule (Redis's
/// `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_DELAY_SECS: u64 = 5;

/// One key on its way to the file, copied out under its shard's lock.
struct Record {
    key: Vec<u8>,
    value: keel_rdb::Value,
    meta: KeyMeta,
}

/// A snapshot's instant, taken and not yet written: what the file will
/// hold. The store runs one snapshot at a time; this holds the claim.
pub struct Snapshot {
    _claim: super::SnapshotClaim,
    libraries: Vec<Bytes>,
    sizes: Vec<keel_store::DbSize>,
    /// Where the data was in its replication history at the instant.
    pub history: History,
}

/// Takes the instant a snapshot saves (see `keel_store::snapshot`), with
/// the claim to the store's one snapshot. BGSAVE takes it before it
/// replies, as Redis forks before it replies: every write acknowledged
/// after the reply is left out of the file.
///
/// For a replica, the replication buffer starts recording at that instant
/// if it was not, and the replica is to be sent the stream from there: it
/// continues from the snapshot's offset exactly (see
/// `crate::replication::journal`).
pub fn take_instant(
    server: &Server,
    claim: super::SnapshotClaim,
    replica: Option<&ReplicaLink>,
) -> Snapshot {
    // The libraries are read just before the instant: FUNCTION commands
    // change them, never a script's writes. A script holds the shards it
    // writes while it runs, so the instant falls before or after it.
    let libraries = server.scripting.library_codes();
    let replication = &server.replication;
    let (sizes, history) = {
        let _priority = crate::priority::WorkersPriority::begin();
        server.store.begin_snapshot(unix_ms(), || match replica {
            Some(replica) => {
                let history = replication.record_from_here(true);
                replica.sent.store(history.offset, Ordering::Relaxed);
                history
            }
            None => replication.history_now(),
        })
    };
    Snapshot {
        _claim: claim,
        libraries,
        sizes,
        history,
    }
}

/// Writes the dataset as it was at `snapshot`'s instant to `out` as an RDB
/// file, and returns `out` and the number of keys written.
pub fn write_rdb<W: Write>(
    server: &Server,
    out: W,
    settings: &Settings,
    snapshot: Snapshot,
) -> std::io::Result<(W, u64)> {
    let written = write_instant(server, out, settings, &snapshot);
    if written.is_err() {
        server.store.abort_snapshot();
    }
    written
}

fn write_instant<W: Write>(
    server: &Server,
    out: W,
    settings: &Settings,
    snapshot: &Snapshot,
) -> std::io::Result<(W, u64)> {
    let (libraries, sizes) = (&snapshot.libraries, &snapshot.sizes);
    let store = &server.store;
    let limits = store.encodings.limits();
    let mut file = Writer::new(
        out,
        WriteOptions {
            checksum: settings.checksum,
            compression: settings.compression,
            thresholds: thresholds(&limits),
        },
    )?;
    for (field, value) in aux_fields(&snapshot.history) {
        file.aux(field.as_bytes(), value.as_bytes())?;
    }
    for code in libraries {
        file.functions(code)?;
    }
    let meta = KeyMetaOf::new(server);
    let mut batch = Vec::new();
    let mut keys = 0;
    for (db, size) in sizes.iter().enumerate() {
        if size.keys > 0 {
            file.select_db(db as u64, size.keys, size.expires)?;
        }
        for shard in 0..SHARDS_PER_DB {
            loop {
                let done = {
                    let _priority = crate::priority::WorkersPriority::begin();
                    store.snapshot_step(db, shard, SLOTS_PER_STEP, |entry| {
                        batch.push(meta.record(entry))
                    })
                };
                keys += write_batch(&mut file, &mut batch)?;
                if done {
                    break;
                }
            }
            store.end_snapshot(db, shard, |entry| batch.push(meta.record(entry)));
            keys += write_batch(&mut file, &mut batch)?;
        }
    }
    Ok((file.finish()?, keys))
}

fn write_batch<W: Write>(file: &mut Writer<W>, batch: &mut Vec<Record>) -> std::io::Result<u64> {
    let n = batch.len() as u64;
    for record in batch.drain(..) {
        file.key(&record.key, &record.value, record.meta)?;
    }
    Ok(n)
}

/// What a key's history is written as: its idle time under an LRU policy,
/// its frequency under an LFU one, as Redis's `rdbSaveKeyValuePair`.
struct KeyMetaOf<'a> {
    server: &'a Server,
    clock: keel_store::Clock,
    policy: keel_store::Policy,
}

impl<'a> KeyMetaOf<'a> {
    fn new(server: &'a Server) -> Self {
        KeyMetaOf {
            server,
            clock: server.store.clock(),
            policy: server.store.access.policy(),
        }
    }

    fn record(&self, entry: &Entry) -> Record {
        use keel_store::Policy::{AllKeysLru, VolatileLru};
        let access = entry.access();
        let meta = KeyMeta {
            expire_at_ms: entry.expire_at_ms(),
            idle_seconds: matches!(self.policy, AllKeysLru | VolatileLru)
                .then(|| access.idle_seconds(self.clock)),
            lfu_freq: self.policy.is_lfu().then(|| {
                let counter = access.decayed_counter(&self.server.store.access, self.clock);
                counter.min(255) as u8
            }),
        };
        Record {
            key: entry.key().to_vec(),
            value: plain(entry.value()),
            meta,
        }
    }
}

/// The AUX fields Redis 7.0 writes at the top of a file. The replication
/// id and offset let a replica restarted from the file continue with a
/// partial resync, as Redis 7's do.
fn aux_fields(history: &History) -> Vec<(&'static str, String)> {
    vec![
        (
            "redis-ver",
            crate::cmd::context::REDIS_COMPAT_VERSION.to_string(),
        ),
        ("redis-bits", "64".into()),
        ("ctime", (unix_ms() / 1000).to_string()),
        ("used-mem", crate::memory::sample().allocated.to_string()),
        ("repl-stream-db", history.stream_db.to_string()),
        ("repl-id", history.replid.clone()),
        ("repl-offset", history.offset.to_string()),
        ("aof-base", "0".into()),
    ]
}

/// Why a save failed, as the log and the reply say it.
pub type SaveError = String;

/// Saves the dataset to `settings.path` through a temporary file renamed
/// over it once complete. Returns the keys written.
pub fn save_to_file(
    server: &Server,
    settings: &Settings,
    snapshot: Snapshot,
) -> Result<u64, SaveError> {
    let temp = settings
        .dir
        .join(format!("temp-{}.rdb", std::process::id()));
    let written = write_file(server, &temp, settings, snapshot).and_then(|keys| {
        std::fs::rename(&temp, &settings.path).map_err(|e| {
            format!(
                "Error moving temp DB file {} on the final destination {} (in server root dir {}): {e}",
                temp.display(),
                settings.path.display(),
                settings.dir.display()
            )
        })?;
        Ok(keys)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

fn write_file(
    server: &Server,
    temp: &Path,
    settings: &Settings,
    snapshot: Snapshot,
) -> Result<u64, SaveError> {
    let file = File::create(temp).map_err(|e| {
        format!(
            "Failed opening the temp RDB file {} (in server root dir {}) for saving: {e}",
            temp.display(),
            settings.dir.display()
        )
    })?;
    let write_error = |e: std::io::Error| format!("Write error saving DB on disk: {e}");
    let (out, keys) = write_rdb(
        server,
        BufWriter::with_capacity(WRITE_BUFFER, file),
        settings,
        snapshot,
    )
    .map_err(write_error)?;
    let file = out.into_inner().map_err(|e| write_error(e.into_error()))?;
    file.sync_all().map_err(write_error)?;
    Ok(keys)
}

/// SHUTDOWN's save, DEBUG RELOAD's, FLUSHALL's: saves on the calling
/// thread, once a background save running is done, and records the result
/// as a save.
/// Refused on a thread that holds shard locks (FLUSHALL or DEBUG RELOAD
/// inside EXEC or a script): the instant takes every lock, and would wait
/// for its own.
pub fn save_now(server: &Server) -> Result<(), SaveError> {
    if keel_store::holds_a_lock() {
        let refusal = "A save can't start inside a transaction or a script".to_string();
        warning!("{refusal}");
        return Err(refusal);
    }
    save_with(server, server.persistence.wait_for_snapshot())
}

/// SAVE (never inside MULTI or a script): saves on the calling thread and
/// records the result as a save.
pub fn save_with(server: &Server, claim: super::SnapshotClaim) -> Result<(), SaveError> {
    let settings = Settings::of(&server.config.read());
    let dirty_before = server.persistence.dirty();
    let started = Instant::now();
    let snapshot = take_instant(server, claim, None);
    let result = save_to_file(server, &settings, snapshot);
    match &result {
        Ok(keys) => {
            notice!(
                "DB saved on disk ({keys} keys in {:.3} s)",
                started.elapsed().as_secs_f64()
            );
            server.persistence.saved(dirty_before, None);
        }
        Err(e) => warning!("{e}"),
    }
    result.map(|_| ())
}

/// Saves at a shutdown by signal as `directive` (`shutdown-on-sigterm`
/// or `shutdown-on-sigint`) says: `save` always, `nosave` never, otherwise
/// if save points are set.
pub fn save_on_signal(server: &Server, directive: &str) -> Result<(), SaveError> {
    let (flags, settings) = {
        let config = server.config.read();
        (config.value(directive), Settings::of(&config))
    };
    let says = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    let save = !says("nosave") && (says("save") || !settings.save_points.is_empty());
    match save {
        true => save_now(server),
        false => Ok(()),
    }
}

/// Why a background save did not start.
#[derive(Debug, PartialEq, Eq)]
pub enum NotStarted {
    /// One is running already.
    Running,
    /// The save thread is gone.
    NoThread,
}

/// Work for the save thread.
pub enum Job {
    /// A background save of the instant taken when it started, with the
    /// settings and the writes counted then.
    Save {
        snapshot: Snapshot,
        settings: Settings,
        dirty_before: u64,
    },
    /// A replica's (or `redis-cli --rdb`'s) payload, sent in chunks to the
    /// connection that asked (see [`send_payload`]).
    Payload {
        settings: Settings,
        request: PayloadRequest,
    },
}

/// What a connection asks of a full synchronisation's payload.
pub struct PayloadRequest {
    pub format: PayloadFormat,
    /// Where the chunks go.
    pub out: tokio::sync::mpsc::Sender<Bytes>,
    /// Told where the snapshot is in the replication history, once its
    /// instant is taken (for `+FULLRESYNC`).
    pub instant: tokio::sync::oneshot::Sender<History>,
    /// The replica that follows the stream from there (see
    /// [`take_instant`]); `None` for `rdb-only`.
    pub replica: Option<Arc<ReplicaLink>>,
}

/// How a full synchronisation's payload is framed.
pub enum PayloadFormat {
    /// `$EOF:<mark>\r\n`, the file, the mark: streamed as it is written,
    /// for peers that announced `capa eof` (Redis's diskless sync).
    EofMark([u8; EOF_MARK_LEN]),
    /// `$<length>\r\n` and the file: written to disk first, to know its
    /// length.
    Length,
}

/// The length of the mark ending a diskless payload (Redis's run id size).
pub const EOF_MARK_LEN: usize = 40;

/// Bytes per chunk sent to a syncing connection; a few are in flight.
const PAYLOAD_CHUNK: usize = 256 << 10;

/// Starts the save thread, which runs background saves and payloads one
/// at a time, below the workers' priority when `may_lower_priority`.
pub fn start(server: Arc<Server>, may_lower_priority: bool) -> std::io::Result<()> {
    let (jobs, received) = std::sync::mpsc::channel::<Job>();
    let saver = server.clone();
    std::thread::Builder::new()
        .name("keel-bgsave".into())
        .spawn(move || {
            crate::priority::lower_this_thread(may_lower_priority);
            for job in received {
                match job {
                    Job::Save {
                        snapshot,
                        settings,
                        dirty_before,
                    } => background_save(&saver, &settings, dirty_before, snapshot),
                    Job::Payload { settings, request } => {
                        if let Err(e) = send_payload(&saver, &settings, request) {
                            warning!("Full synchronisation payload not sent: {e}");
                        }
                    }
                }
            }
        })?;
    server.persistence.set_save_thread(jobs);
    Ok(())
}

fn background_save(server: &Server, settings: &Settings, dirty_before: u64, snapshot: Snapshot) {
    let started = Instant::now();
    match save_to_file(server, settings, snapshot) {
        Ok(keys) => {
            let took = started.elapsed();
            notice!(
                "Background saving terminated with success ({keys} keys in {:.3} s)",
                took.as_secs_f64()
            );
            server.persistence.saved(dirty_before, Some(took));
        }
        Err(e) => {
            warning!("Background saving error: {e}");
            server.persistence.bgsave_failed(started.elapsed());
        }
    }
}

/// Sends the dataset to `out` in `format`. An error ends the sending (the
/// connection is gone, or the disk failed).
fn send_payload(
    server: &Server,
    settings: &Settings,
    request: PayloadRequest,
) -> Result<(), String> {
    let mut chunks = ChunkSender {
        out: request.out,
        buf: Vec::with_capacity(PAYLOAD_CHUNK),
    };
    let io = |e: std::io::Error| e.to_string();
    let claim = server.persistence.wait_for_snapshot();
    let snapshot = take_instant(server, claim, request.replica.as_deref());
    if request.instant.send(snapshot.history.clone()).is_err() {
        server.store.abort_snapshot();
        return Err("the connection is gone".into());
    }
    match request.format {
        PayloadFormat::EofMark(mark) => {
            chunks.write_all(b"$EOF:").map_err(io)?;
            chunks.write_all(&mark).map_err(io)?;
            chunks.write_all(b"\r\n").map_err(io)?;
            let (mut chunks, _) = write_rdb(server, chunks, settings, snapshot).map_err(io)?;
            chunks.write_all(&mark).map_err(io)?;
            chunks.flush().map_err(io)
        }
        PayloadFormat::Length => {
            let temp = settings
                .dir
                .join(format!("temp-sync-{}.rdb", std::process::id()));
            let sent = write_file(server, &temp, settings, snapshot).and_then(|_| {
                let mut file = File::open(&temp).map_err(io)?;
                let length = file.metadata().map_err(io)?.len();
                chunks
                    .write_all(format!("${length}\r\n").as_bytes())
                    .map_err(io)?;
                std::io::copy(&mut file, &mut chunks).map_err(io)?;
                chunks.flush().map_err(io)
            });
            let _ = std::fs::remove_file(&temp);
            sent
        }
    }
}

/// Asks the save thread to send a full synchronisation's payload to
/// `out`; false if the thread is gone.
pub fn request_payload(server: &Server, request: PayloadRequest) -> bool {
    let settings = Settings::of(&server.config.read());
    server
        .persistence
        .send_to_save_thread(Job::Payload { settings, request })
}

/// A writer whose bytes go to a connection in chunks, waiting while the
/// connection has a few unsent: the payload takes a few chunks of memory
/// however large the dataset.
struct ChunkSender {
    out: tokio::sync::mpsc::Sender<Bytes>,
    buf: Vec<u8>,
}

impl Write for ChunkSender {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= PAYLOAD_CHUNK {
            self.flush()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(PAYLOAD_CHUNK),
        ));
        self.out
            .blocking_send(chunk)
            .map_err(|_| std::io::Error::other("the connection closed"))
    }
}

/// Starts a background save (BGSAVE, the schedule): takes its instant
/// here and leaves the writing to the save thread.
pub fn start_bgsave(server: &Server) -> Result<(), NotStarted> {
    let Some(claim) = server.persistence.try_claim_snapshot() else {
        return Err(NotStarted::Running);
    };
    server.persistence.begin_bgsave(unix_ms() / 1000);
    let job = Job::Save {
        snapshot: take_instant(server, claim, None),
        settings: Settings::of(&server.config.read()),
        dirty_before: server.persistence.dirty(),
    };
    if !server.persistence.send_to_save_thread(job) {
        server.persistence.bgsave_failed(Duration::ZERO);
        return Err(NotStarted::NoThread);
    }
    notice!("Background saving started");
    Ok(())
}

/// The `save` schedule and BGSAVE SCHEDULE, checked every 100 ms on the
/// maintenance thread, as Redis's `serverCron` checks them: a background
/// save starts when a save point's seconds have passed since the last
/// save with at least its changes made, unless the last one failed less
/// than [`RETRY_DELAY_SECS`] ago.
pub async fn run_schedule(server: Arc<Server>) {
    // Found once: a tick reads this one directive, not every save setting
    // looked up by name.
    let save = crate::config::directive("save").expect("save is a directive");
    loop {
        crate::clock::sleep_until_next(Duration::from_millis(100)).await;
        let now = unix_ms() / 1000;
        let save_points = super::save_points(&(save.get)(&server.config.read()));
        if server
            .persistence
            .save_due(now, &save_points, RETRY_DELAY_SECS)
        {
            // A save already running is the only refusal, and then this
            // one is not needed.
            let _ = start_bgsave(&server);
        }
    }
}

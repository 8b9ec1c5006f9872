//! Snapshots on disk: Redis's RDB files, written while keel serves and
//! read back at start-up, so a restart or an upgrade starts warm.
//!
//! The file is Redis 7.0's (version 10, see `keel_rdb::file`), so
//! redis-server loads keel's files and keel loads Redis 6.2 to 7.2's.
//!
//! **Saving.** SAVE runs on the calling connection's worker; BGSAVE, the
//! `save <seconds> <changes>` schedule and BGSAVE SCHEDULE on a thread of
//! their own (`keel-bgsave`); SHUTDOWN and SIGTERM save before exit when
//! save points are set. All of them write the same way (`save.rs`): the
//! snapshot's instant is taken across every shard at once, then each shard
//! is walked a batch at a time while clients keep writing, and a key a
//! client changes before the walk reaches it is copied first (the
//! algorithm and its costs are in `keel_store::snapshot`). The file is
//! written as `temp-<pid>.rdb` in `dir`, flushed to disk, then renamed over
//! `dbfilename`, so a crash mid-save never leaves a torn file in its place.
//! Redis forks instead, which can double its memory under writes; keel's
//! snapshot holds one bit per key plus the copies of keys written ahead of
//! the walk, drained after every batch.
//!
//! The save thread works below the workers' priority, as maintenance does
//! (see `crate::priority`), and at theirs while it holds a shard, so a
//! request never waits behind a preempted saver.
//!
//! **Loading.** At start-up the listeners open first and the file is loaded
//! on a thread (`load.rs`); until it is done every command but those Redis
//! allows while loading (INFO, CONFIG, SHUTDOWN, ...) gets `-LOADING`, so
//! nothing half-loaded is ever served. INFO shows the progress, and the log
//! every few seconds on a large file. A truncated or corrupt file stops the
//! server with the file's name, the offset and what is wrong there. Loading
//! honours `maxmemory`: past it, keys are evicted by the policy as they
//! come (or, under `noeviction`, the rest are not loaded), and the log says
//! how many.

pub mod load;
pub mod save;
pub mod values;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::Config;
use crate::striped::StripedCounter;

/// What persistence knows, for INFO and the commands.
#[derive(Default)]
pub struct Persistence {
    /// Writes counted since start, per thread: every write adds one, so
    /// a single counter would move one cache line between the workers'
    /// cores on each (see `crate::striped`).
    writes: StripedCounter,
    /// Of those, the writes the last successful save holds. The difference
    /// is Redis's dirty count (`rdb_changes_since_last_save`).
    saved_writes: AtomicU64,
    state: Mutex<SaveState>,
    /// Whether the last background save failed (read on the write path).
    last_bgsave_failed: AtomicBool,
    /// Set while a snapshot is taken and written: the store runs one at a
    /// time (see [`SnapshotClaim`]).
    snapshot_running: Arc<AtomicBool>,
    /// Where background saves are sent (see [`save::start`]).
    save_thread: Mutex<Option<std::sync::mpsc::Sender<save::Job>>>,
    /// The file being loaded, if one is.
    pub loading: Loading,
}

/// Saves done and running.
#[derive(Default)]
struct SaveState {
    /// The running background save: when it started (Unix seconds).
    running_since: Option<u64>,
    /// BGSAVE SCHEDULE asked for another once the running one is done.
    scheduled: bool,
    /// When the last successful save finished (Unix seconds).
    last_save: u64,
    /// When the last background save was tried (Unix seconds), for the
    /// retry delay after a failure.
    last_try: u64,
    /// Seconds the last background save took, -1 before the first.
    last_bgsave_secs: Option<u64>,
    /// Saves done since start.
    saves: u64,
    /// Keys the last load put in, and those it skipped as expired.
    last_load: load::Report,
}

/// INFO's view of persistence.
pub struct Status {
    pub dirty: u64,
    pub bgsave_in_progress: bool,
    pub current_bgsave_secs: Option<u64>,
    pub last_save: u64,
    pub last_bgsave_ok: bool,
    pub last_bgsave_secs: Option<u64>,
    pub saves: u64,
    pub last_load: load::Report,
}

/// The settings a save or a load reads, taken from the configuration as
/// it starts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `dir`/`dbfilename`.
    pub path: PathBuf,
    /// `dir`.
    pub dir: PathBuf,
    /// `rdbcompression`.
    pub compression: bool,
    /// `rdbchecksum`.
    pub checksum: bool,
    /// `save`: (seconds, changes) pairs.
    pub save_points: Vec<(u64, u64)>,
    /// `stop-writes-on-bgsave-error`.
    pub stop_writes_on_error: bool,
}

impl Settings {
    pub fn of(config: &Config) -> Settings {
        let get = |name: &str| config.value(name);
        let dir = PathBuf::from(&config.dir);
        Settings {
            path: dir.join(get("dbfilename")),
            dir,
            compression: get("rdbcompression") == "yes",
            checksum: get("rdbchecksum") == "yes",
            save_points: save_points(&get("save")),
            stop_writes_on_error: get("stop-writes-on-bgsave-error") == "yes",
        }
    }
}

/// The (seconds, changes) pairs of a `save` directive's value.
pub fn save_points(save: &str) -> Vec<(u64, u64)> {
    let numbers: Vec<u64> = save
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    numbers.chunks_exact(2).map(|p| (p[0], p[1])).collect()
}

/// Redis's refusal of writes after a failed background save.
pub const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

impl Persistence {
    /// A server that started at `now_secs`: LASTSAVE reports the start
    /// until the first save, as Redis's does.
    pub fn new(now_secs: u64) -> Persistence {
        let persistence = Persistence::default();
        persistence.state.lock().last_save = now_secs;
        persistence
    }

    /// Counts one write, for the save schedule and INFO.
    pub fn note_write(&self) {
        self.writes.add(1);
    }

    /// Writes since the last successful save.
    pub fn dirty(&self) -> u64 {
        let saved = self.saved_writes.load(Ordering::Relaxed);
        self.writes.sum().saturating_sub(saved)
    }

    fn set_save_thread(&self, jobs: std::sync::mpsc::Sender<save::Job>) {
        *self.save_thread.lock() = Some(jobs);
    }

    /// False if the save thread is gone.
    fn send_to_save_thread(&self, job: save::Job) -> bool {
        self.save_thread
            .lock()
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok())
    }

    /// When the last successful save finished (LASTSAVE).
    pub fn last_save(&self) -> u64 {
        self.state.lock().last_save
    }

    /// Whether a background save runs.
    pub fn bgsave_running(&self) -> bool {
        self.state.lock().running_since.is_some()
    }

    /// Whether writes are refused: the last background save failed, save
    /// points are set and `stop-writes-on-bgsave-error` is on (Redis's
    /// MISCONF). One atomic load unless a save failed.
    pub fn refuses_writes(&self, config: &parking_lot::RwLock<Config>) -> bool {
        if !self.last_bgsave_failed.load(Ordering::Relaxed) {
            return false;
        }
        let settings = Settings::of(&config.read());
        settings.stop_writes_on_error && !settings.save_points.is_empty()
    }

    /// The claim to the store's one snapshot, if no other holds it.
    pub fn try_claim_snapshot(&self) -> Option<SnapshotClaim> {
        let running = &self.snapshot_running;
        running
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then(|| SnapshotClaim(running.clone()))
    }

    /// The claim to the store's one snapshot, once the snapshot being
    /// written (by BGSAVE, for a replica) is done.
    pub fn wait_for_snapshot(&self) -> SnapshotClaim {
        loop {
            if let Some(claim) = self.try_claim_snapshot() {
                return claim;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Marks a background save started at `now_secs`.
    fn begin_bgsave(&self, now_secs: u64) {
        let mut state = self.state.lock();
        state.running_since = Some(now_secs);
        state.last_try = now_secs;
    }

    /// BGSAVE SCHEDULE while a save runs: another starts once it is done.
    pub fn schedule_bgsave(&self) {
        self.state.lock().scheduled = true;
    }

    /// Records a successful save that began when `dirty_before` writes were
    /// counted (those made since stay counted); `bgsave_took` for a
    /// background one.
    fn saved(&self, dirty_before: u64, bgsave_took: Option<std::time::Duration>) {
        let mut state = self.state.lock();
        // Only this moves it, under the state lock: it never passes the
        // writes counted, since `dirty_before` was read off them.
        self.saved_writes.fetch_add(dirty_before, Ordering::Relaxed);
        state.last_save = crate::server::unix_ms() / 1000;
        self.last_bgsave_failed.store(false, Ordering::Relaxed);
        state.saves += 1;
        if let Some(took) = bgsave_took {
            state.running_since = None;
            state.last_bgsave_secs = Some(took.as_secs());
        }
    }

    /// Records a failed background save.
    fn bgsave_failed(&self, took: std::time::Duration) {
        let mut state = self.state.lock();
        state.running_since = None;
        self.last_bgsave_failed.store(true, Ordering::Relaxed);
        state.last_bgsave_secs = Some(took.as_secs());
    }

    /// Whether the schedule should start a background save at `now_secs`:
    /// one was scheduled, or a save point is due (see
    /// [`save::run_schedule`]).
    fn save_due(&self, now_secs: u64, save_points: &[(u64, u64)], retry_delay_secs: u64) -> bool {
        let mut state = self.state.lock();
        if state.running_since.is_some() {
            return false;
        }
        if std::mem::take(&mut state.scheduled) {
            return true;
        }
        let dirty = self.dirty();
        let may_try = !self.last_bgsave_failed.load(Ordering::Relaxed)
            || now_secs.saturating_sub(state.last_try) > retry_delay_secs;
        may_try
            && save_points.iter().any(|&(seconds, changes)| {
                dirty >= changes && now_secs.saturating_sub(state.last_save) > seconds
            })
    }

    /// Records what the last load did.
    fn loaded(&self, report: load::Report) {
        self.state.lock().last_load = report;
    }

    /// INFO's view at `now_secs`.
    pub fn status(&self, now_secs: u64) -> Status {
        let state = self.state.lock();
        Status {
            dirty: self.dirty(),
            bgsave_in_progress: state.running_since.is_some(),
            current_bgsave_secs: state.running_since.map(|s| now_secs.saturating_sub(s)),
            last_save: state.last_save,
            last_bgsave_ok: !self.last_bgsave_failed.load(Ordering::Relaxed),
            last_bgsave_secs: state.last_bgsave_secs,
            saves: state.saves,
            last_load: state.last_load.clone(),
        }
    }
}

/// The right to take and write the store's one snapshot, given up when
/// dropped (by the thread that wrote it, or at once if it failed).
pub struct SnapshotClaim(Arc<AtomicBool>);

impl Drop for SnapshotClaim {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Progress of the file being loaded, read by INFO and dispatch.
#[derive(Default)]
pub struct Loading {
    active: AtomicBool,
    started: AtomicU64,
    total_bytes: AtomicU64,
    loaded_bytes: AtomicU64,
}

/// INFO's view of a load in progress.
pub struct LoadingStatus {
    pub started: u64,
    pub total_bytes: u64,
    pub loaded_bytes: u64,
}

impl Loading {
    /// Whether a load runs: commands not allowed while loading get
    /// `-LOADING`.
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// The load in progress, if one is.
    pub fn status(&self) -> Option<LoadingStatus> {
        self.active().then(|| LoadingStatus {
            started: self.started.load(Ordering::Relaxed),
            total_bytes: self.total_bytes.load(Ordering::Relaxed),
            loaded_bytes: self.loaded_bytes.load(Ordering::Relaxed),
        })
    }

    fn begin(&self, now_secs: u64, total_bytes: u64) {
        self.started.store(now_secs, Ordering::Relaxed);
        self.total_bytes.store(total_bytes, Ordering::Relaxed);
        self.loaded_bytes.store(0, Ordering::Relaxed);
        self.active.store(true, Ordering::Release);
    }

    fn progress(&self, loaded_bytes: u64) {
        self.loaded_bytes.store(loaded_bytes, Ordering::Relaxed);
    }

    fn end(&self) {
        self.active.store(false, Ordering::Release);
    }
}

//! The primary's side of replication: the replication buffer (Redis's
//! backlog and replicas' output buffers in one) and the replicas it feeds.
//!
//! Every write is recorded once, as RESP, at the end of one buffer (see
//! `journal.rs` for when and in which form); the buffer's end is the
//! server's replication offset (`master_repl_offset`). Each replica is a
//! connection that sends from its own position in that same buffer, so a
//! write costs one copy however many replicas follow, as in Redis 7's
//! shared replication buffer.
//!
//! The buffer keeps its last `repl-backlog-size` bytes, so a replica that
//! drops its link and comes back within them continues (`+CONTINUE`)
//! instead of taking a snapshot. It keeps more while a replica still needs
//! them, up to the `replica` class's hard `client-output-buffer-limit`: a
//! replica further behind than that is dropped and must resync, rather
//! than the buffer growing without bound. The buffer is counted apart
//! from the dataset (INFO's `mem_replication_backlog`) and never evicts a
//! key.
//!
//! The buffer starts (`repl_backlog_active`) with the first full
//! synchronisation served, at that snapshot's instant, or when a replica
//! is promoted; it ends when the server becomes a replica itself.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

/// The replication buffer and its replicas.
pub struct Backlog {
    inner: Mutex<Inner>,
    /// Whether writes are recorded: one relaxed load for a write on a
    /// server without replicas.
    active: AtomicBool,
    /// The buffer's end, for the replicas' connections to wait on.
    end: tokio::sync::watch::Sender<u64>,
    /// Bumped on every acknowledgement, for WAIT.
    acks: tokio::sync::watch::Sender<u64>,
}

struct Inner {
    bytes: VecDeque<u8>,
    /// The offset of `bytes[0]`: bytes recorded before it.
    start: u64,
    /// The database the recorded stream has selected; `None` forces a
    /// SELECT before the next command (after a snapshot's instant, whose
    /// replica starts from no selection).
    selected: Option<usize>,
    /// `repl-backlog-size`.
    size: usize,
    /// The replica class's hard output limit (0: none).
    replica_limit: usize,
    replicas: Vec<Arc<ReplicaLink>>,
}

impl Inner {
    fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Drops what neither the backlog nor a replica within its limit
    /// needs.
    fn trim(&mut self) {
        let end = self.end();
        let slowest = self
            .replicas
            .iter()
            .map(|r| r.sent.load(Ordering::Relaxed))
            .filter(|&sent| sent != NOT_STARTED)
            .min()
            .unwrap_or(end);
        let owed = (end - slowest.min(end)) as usize;
        let owed = match self.replica_limit {
            0 => owed,
            limit => owed.min(limit),
        };
        let keep = self.size.max(owed);
        if self.bytes.len() > keep {
            let excess = self.bytes.len() - keep;
            self.bytes.drain(..excess);
            self.start += excess as u64;
            for replica in &self.replicas {
                if replica.sent.load(Ordering::Relaxed) < self.start {
                    replica.drop_now();
                }
            }
        }
    }
}

/// A replica's state on its primary, as INFO's `slaveN` line shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ReplicaState {
    /// Waiting for its snapshot (`wait_bgsave`).
    WaitSnapshot,
    /// Receiving its snapshot (`send_bulk`).
    SendSnapshot,
    /// Following the stream (`online`).
    Online,
}

impl ReplicaState {
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::WaitSnapshot => "wait_bgsave",
            ReplicaState::SendSnapshot => "send_bulk",
            ReplicaState::Online => "online",
        }
    }
}

/// One replica fed by this server.
#[derive(Debug)]
pub struct ReplicaLink {
    pub ip: String,
    /// The port it listens on (`REPLCONF listening-port`).
    pub port: i64,
    state: AtomicU8,
    /// The offset up to which it was sent the stream.
    pub sent: AtomicU64,
    /// The offset it last acknowledged (`REPLCONF ACK`).
    pub acked: AtomicU64,
    /// When it last acknowledged, Unix ms.
    pub last_ack_ms: AtomicU64,
    /// Set when it fell too far behind, or the buffer ended.
    pub dropped: AtomicBool,
    /// Wakes its connection when it is dropped, even mid-write.
    pub drop_signal: tokio::sync::Notify,
}

/// `sent` of a replica whose snapshot's instant is not taken yet.
pub const NOT_STARTED: u64 = u64::MAX;

impl ReplicaLink {
    pub fn state(&self) -> ReplicaState {
        match self.state.load(Ordering::Relaxed) {
            0 => ReplicaState::WaitSnapshot,
            1 => ReplicaState::SendSnapshot,
            _ => ReplicaState::Online,
        }
    }

    pub fn set_state(&self, state: ReplicaState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    fn drop_now(&self) {
        self.dropped.store(true, Ordering::Relaxed);
        self.drop_signal.notify_one();
    }

    /// Seconds since its last acknowledgement (INFO's `lag`).
    pub fn lag_seconds(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.last_ack_ms.load(Ordering::Relaxed)) / 1000
    }
}

/// Why a replica cannot be sent the stream from where it is.
#[derive(Debug, PartialEq, Eq)]
pub struct Lost;

impl Default for Backlog {
    fn default() -> Self {
        Backlog {
            inner: Mutex::new(Inner {
                bytes: VecDeque::new(),
                start: 0,
                selected: None,
                size: 1 << 20,
                replica_limit: 256 << 20,
                replicas: Vec::new(),
            }),
            active: AtomicBool::new(false),
            end: tokio::sync::watch::channel(0).0,
            acks: tokio::sync::watch::channel(0).0,
        }
    }
}

impl Backlog {
    /// Whether writes are recorded.
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Starts recording at `offset` unless recording already; returns the
    /// offset recorded up to. `selected_reset` forces a SELECT before the
    /// next command.
    pub fn start(&self, offset: u64, selected_reset: bool) -> u64 {
        let mut inner = self.inner.lock();
        if !self.active() {
            inner.bytes.clear();
            inner.start = offset;
            inner.selected = None;
            self.active.store(true, Ordering::Relaxed);
        }
        if selected_reset {
            inner.selected = None;
        }
        inner.end()
    }

    /// Applies the configured limits (CONFIG SET), trimming at once.
    pub fn set_limits(&self, size: usize, replica_limit: usize) {
        let mut inner = self.inner.lock();
        inner.size = size;
        inner.replica_limit = replica_limit;
        inner.trim();
    }

    /// Stops recording (the server becomes a replica): its replicas are
    /// dropped, the buffer freed.
    pub fn stop(&self) {
        let mut inner = self.inner.lock();
        self.active.store(false, Ordering::Relaxed);
        inner.start = inner.end();
        inner.bytes = VecDeque::new();
        for replica in inner.replicas.drain(..) {
            replica.drop_now();
        }
        let end = inner.end();
        drop(inner);
        self.end.send_replace(end);
    }

    /// Records `commands` (each with the database it runs in, `None` for
    /// one that runs in any: PING, REPLCONF) as one piece: nothing else is
    /// recorded between them. Returns the new end offset.
    pub fn record<'a>(
        &self,
        commands: impl IntoIterator<Item = (Option<usize>, &'a [Bytes])>,
    ) -> u64 {
        let mut inner = self.inner.lock();
        let mut encoded = Vec::new();
        for (db, args) in commands {
            if let Some(db) = db.filter(|&db| inner.selected != Some(db)) {
                encode(
                    &mut encoded,
                    &[Bytes::from_static(b"SELECT"), db.to_string().into()],
                );
                inner.selected = Some(db);
            }
            encode(&mut encoded, args);
        }
        inner.bytes.extend(encoded);
        inner.trim();
        let end = inner.end();
        drop(inner);
        self.end.send_replace(end);
        end
    }

    /// The offset recorded up to.
    pub fn end(&self) -> u64 {
        self.inner.lock().end()
    }

    /// The first offset still held and the bytes held (INFO's
    /// `repl_backlog_first_byte_offset` less one and `repl_backlog_histlen`).
    pub fn held(&self) -> (u64, usize) {
        let inner = self.inner.lock();
        (inner.start, inner.bytes.len())
    }

    /// Whether the stream from `offset` on is still held (PSYNC).
    pub fn holds_from(&self, offset: u64) -> bool {
        let inner = self.inner.lock();
        self.active() && inner.start <= offset && offset <= inner.end()
    }

    /// Copies up to `max` bytes of the stream from `offset` into `out`.
    pub fn copy_from(&self, offset: u64, max: usize, out: &mut Vec<u8>) -> Result<usize, Lost> {
        let inner = self.inner.lock();
        if !self.active() || offset < inner.start {
            return Err(Lost);
        }
        let skip = (offset - inner.start) as usize;
        let take = inner.bytes.len().saturating_sub(skip).min(max);
        out.extend(inner.bytes.range(skip..skip + take));
        Ok(take)
    }

    /// A receiver of the end offset, changed on every record.
    pub fn watch_end(&self) -> tokio::sync::watch::Receiver<u64> {
        self.end.subscribe()
    }

    /// A receiver changed on every acknowledgement.
    pub fn watch_acks(&self) -> tokio::sync::watch::Receiver<u64> {
        self.acks.subscribe()
    }

    /// Registers a replica that will be sent the stream from `offset`.
    pub fn add_replica(&self, ip: String, port: i64, offset: u64) -> Arc<ReplicaLink> {
        let link = Arc::new(ReplicaLink {
            ip,
            port,
            state: AtomicU8::new(ReplicaState::WaitSnapshot as u8),
            sent: AtomicU64::new(offset),
            acked: AtomicU64::new(0),
            last_ack_ms: AtomicU64::new(crate::server::unix_ms()),
            dropped: AtomicBool::new(false),
            drop_signal: tokio::sync::Notify::new(),
        });
        self.inner.lock().replicas.push(link.clone());
        link
    }

    /// Forgets a replica whose connection ended.
    pub fn remove_replica(&self, link: &Arc<ReplicaLink>) {
        self.inner.lock().replicas.retain(|r| !Arc::ptr_eq(r, link));
    }

    /// The replicas, in the order they connected.
    pub fn replicas(&self) -> Vec<Arc<ReplicaLink>> {
        self.inner.lock().replicas.clone()
    }

    /// Records a replica's acknowledgement of `offset`.
    pub fn acknowledged(&self, link: &ReplicaLink, offset: u64) {
        link.acked.fetch_max(offset, Ordering::Relaxed);
        link.last_ack_ms
            .store(crate::server::unix_ms(), Ordering::Relaxed);
        self.acks.send_modify(|n| *n += 1);
    }

    /// Replicas online that acknowledged `offset` or more.
    pub fn acknowledged_by(&self, offset: u64) -> usize {
        self.online_where(|r| r.acked.load(Ordering::Relaxed) >= offset)
    }

    /// Replicas online whose last acknowledgement is at most `max_lag`
    /// seconds old (`min-replicas-max-lag`): checked on every write while
    /// `min-replicas-to-write` is set, so counted in place.
    pub fn good_replicas(&self, max_lag: u64, now_ms: u64) -> usize {
        self.online_where(|r| r.lag_seconds(now_ms) <= max_lag)
    }

    fn online_where(&self, holds: impl Fn(&ReplicaLink) -> bool) -> usize {
        let inner = self.inner.lock();
        (inner.replicas.iter())
            .filter(|r| r.state() == ReplicaState::Online && holds(r))
            .count()
    }
}

/// Appends `args` as a RESP array of bulk strings.
fn encode(out: &mut Vec<u8>, args: &[Bytes]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn records_select_once_per_database_and_keeps_the_backlog_size() {
        let backlog = Backlog::default();
        assert!(!backlog.active());
        backlog.set_limits(128, 0);
        assert_eq!(backlog.start(100, false), 100);
        let set = args(&["SET", "k", "v"]);
        let end = backlog.record([(Some(0), &set[..]), (Some(0), &set[..])]);
        let mut out = Vec::new();
        let copied = backlog.copy_from(100, 1 << 20, &mut out);
        assert_eq!(copied, Ok(out.len()));
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("SELECT").count(), 1);
        assert_eq!(end, 100 + text.len() as u64);
        for _ in 0..10 {
            backlog.record([(Some(1), &set[..])]);
        }
        let (start, held) = backlog.held();
        assert_eq!(held, 128);
        assert_eq!(backlog.copy_from(start - 1, 1, &mut Vec::new()), Err(Lost));
        assert!(backlog.holds_from(backlog.end()));
    }

    #[test]
    fn keeps_what_a_replica_still_needs_up_to_its_limit() {
        let backlog = Backlog::default();
        backlog.set_limits(16, 200);
        backlog.start(0, false);
        let replica = backlog.add_replica("127.0.0.1".into(), 6380, 0);
        let set = args(&["SET", "k", "v"]);
        backlog.record([(None, &set[..])]);
        assert_eq!(backlog.held(), (0, 27));
        for _ in 0..10 {
            backlog.record([(None, &set[..])]);
        }
        let (start, held) = backlog.held();
        assert_eq!(held, 200, "the replica's limit bounds the buffer");
        assert!(start > replica.sent.load(Ordering::Relaxed));
        backlog.remove_replica(&replica);
        backlog.record([(None, &set[..])]);
        assert_eq!(backlog.held().1, 16);
    }
}

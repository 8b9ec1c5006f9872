//! Replication, Redis's protocol: this server as a replica of a Redis or
//! keel primary (REPLICAOF, the `replicaof` directive).
//!
//! A replica follows one primary through a link (`replica.rs`) that runs on
//! a thread of its own, `keel-replica`: it connects, goes through Redis's
//! handshake (PING, AUTH with `masterauth`/`masteruser`, REPLCONF
//! listening-port and `capa eof psync2`, PSYNC), loads the primary's
//! snapshot when it answers FULLRESYNC (from a diskless `$EOF:` payload or
//! one with a length, written to `dir` and loaded as a start-up file is,
//! clients getting `-LOADING` meanwhile), then applies the command stream
//! as the primary's client, acknowledging its offset every second and when
//! asked (REPLCONF GETACK). A link that drops reconnects and asks to
//! continue where it stopped (PSYNC with the replication id and offset):
//! the primary answers CONTINUE when its backlog still holds the rest.
//!
//! While a replica, keel behaves as Redis's do: clients' writes get
//! `-READONLY` (`replica-read-only`), keys are never expired nor evicted
//! locally (a key whose TTL has passed reads as missing until the primary's
//! DEL arrives, and `maxmemory` is the primary's to enforce), so the
//! dataset follows the primary's exactly.
//!
//! As a primary, keel records its writes for replicas in a replication
//! buffer (`backlog.rs`), in the order and form `journal.rs` explains, and
//! each replica's connection sends it the stream from there, after a
//! snapshot (`+FULLRESYNC`) or from where it stopped (`+CONTINUE`).

pub mod backlog;
pub mod journal;
pub mod replica;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

/// Where a replica replicates from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Primary {
    pub host: String,
    pub port: u16,
}

/// The state of a replica's link, as INFO and ROLE name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Waiting to connect (again).
    Connect,
    /// Connected, in the handshake.
    Connecting,
    /// Receiving and loading the primary's snapshot.
    Sync,
    /// Applying the command stream.
    Connected,
}

impl LinkState {
    /// ROLE's name of the state.
    pub fn name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// The server's replication state.
pub struct Replication {
    /// The primary followed, if this server is a replica, with the
    /// generation of that choice: every REPLICAOF starts a new one, and a
    /// link of an older generation ends.
    target: tokio::sync::watch::Sender<(u64, Option<Primary>)>,
    /// Whether this server is a replica, for the write path.
    replica: AtomicBool,
    /// Whether the link applies the primary's stream, for the read path.
    link_up: AtomicBool,
    link: Mutex<Link>,
    /// The replication id of the data, and the one before it (after a
    /// promotion or a primary's change of history).
    ids: Mutex<(String, String)>,
    /// How far into the primary's stream the data is (bytes applied).
    offset: AtomicU64,
    /// The database the stream had selected when it stopped.
    stream_db: std::sync::atomic::AtomicUsize,
    /// Full synchronisations served (SYNC, PSYNC), INFO's `sync_full`.
    pub syncs_served: AtomicU64,
    /// PSYNCs that asked to continue and got a full synchronisation
    /// instead, INFO's `sync_partial_err`.
    pub partial_syncs_refused: AtomicU64,
    /// PSYNCs continued from the backlog, INFO's `sync_partial_ok`.
    pub partial_syncs_served: AtomicU64,
    /// The stream recorded for replicas, while a primary.
    pub backlog: std::sync::Arc<backlog::Backlog>,
    /// The last offset of the second id's history (`second_repl_offset`),
    /// up to which a replica of the previous primary may continue.
    second_offset: AtomicU64,
}

/// What the link is doing.
#[derive(Debug, Clone, Copy)]
pub struct Link {
    pub state: LinkState,
    /// When the link last received something (Unix seconds).
    pub last_io: u64,
    /// When the link went down (Unix seconds), while it is.
    pub down_since: Option<u64>,
}

/// A point in a replication history: the id, the offset, and the database
/// the stream had selected there (RDB's `repl-id`, `repl-offset`,
/// `repl-stream-db`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    pub replid: String,
    pub offset: u64,
    pub stream_db: usize,
}

/// What INFO replication and ROLE show.
pub struct Status {
    pub primary: Option<Primary>,
    pub link: Link,
    pub replid: String,
    pub replid2: String,
    pub offset: u64,
    /// `second_repl_offset`, once the data has a second id.
    pub second_offset: Option<u64>,
}

/// `second_offset` before the data has a second id.
const NO_SECOND_OFFSET: u64 = u64::MAX;

impl Replication {
    /// A primary whose data has the replication id `replid`.
    pub fn new(replid: String) -> Replication {
        Replication {
            target: tokio::sync::watch::channel((0, None)).0,
            replica: AtomicBool::new(false),
            link_up: AtomicBool::new(false),
            link: Mutex::new(Link {
                state: LinkState::Connect,
                last_io: 0,
                down_since: None,
            }),
            ids: Mutex::new((replid, "0".repeat(40))),
            offset: AtomicU64::new(0),
            stream_db: std::sync::atomic::AtomicUsize::new(0),
            syncs_served: AtomicU64::new(0),
            partial_syncs_refused: AtomicU64::new(0),
            partial_syncs_served: AtomicU64::new(0),
            backlog: Default::default(),
            second_offset: AtomicU64::new(NO_SECOND_OFFSET),
        }
    }

    /// Whether this server is a replica.
    pub fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Relaxed)
    }

    /// Whether commands that read data are refused: a replica whose link
    /// is not up, with `replica-serve-stale-data no`. One atomic load on a
    /// primary.
    pub fn serves_no_stale_data(
        &self,
        config: &parking_lot::RwLock<crate::config::Config>,
    ) -> bool {
        if !self.is_replica() || self.link_up.load(Ordering::Relaxed) {
            return false;
        }
        config.read().value("replica-serve-stale-data") == "no"
    }

    /// REPLICAOF host port: follows `primary` (a new link, unless it is the
    /// one followed already: false then). `None`: REPLICAOF NO ONE, this
    /// server becomes a primary, its data a history of its own.
    pub fn follow(&self, primary: Option<Primary>) -> bool {
        let current = self.target.borrow().clone();
        if current.1 == primary {
            return false;
        }
        if primary.is_none() && current.1.is_some() {
            let mut ids = self.ids.lock();
            ids.1 = std::mem::replace(&mut ids.0, new_replid());
            let offset = self.offset.load(Ordering::Relaxed);
            self.second_offset.store(offset + 1, Ordering::Relaxed);
        }
        if primary.is_some() && self.backlog.active() {
            self.offset.store(self.backlog.end(), Ordering::Relaxed);
            self.backlog.stop();
        }
        self.replica.store(primary.is_some(), Ordering::Relaxed);
        self.link_up.store(false, Ordering::Relaxed);
        *self.link.lock() = Link {
            state: LinkState::Connect,
            last_io: 0,
            down_since: Some(crate::server::unix_ms() / 1000),
        };
        self.target.send_replace((current.0 + 1, primary));
        true
    }

    /// The primary followed and the link's state.
    pub fn status(&self) -> Status {
        let ids = self.ids.lock().clone();
        Status {
            primary: self.target.borrow().1.clone(),
            link: *self.link.lock(),
            replid: ids.0,
            replid2: ids.1,
            offset: self.master_offset(),
            second_offset: match self.second_offset.load(Ordering::Relaxed) {
                NO_SECOND_OFFSET => None,
                offset => Some(offset),
            },
        }
    }

    /// The offset the data is at: the end of the stream recorded while a
    /// primary that records one, else how far the primary's was applied.
    pub fn master_offset(&self) -> u64 {
        match self.backlog.active() {
            true => self.backlog.end(),
            false => self.offset.load(Ordering::Relaxed),
        }
    }

    /// Starts recording the stream for replicas, if not yet (see
    /// `backlog.rs`); `selected_reset` forces a SELECT before the next
    /// command, for a replica starting from a snapshot. Returns the history
    /// at this point.
    pub fn record_from_here(&self, selected_reset: bool) -> History {
        let offset = self.offset.load(Ordering::Relaxed);
        let offset = self.backlog.start(offset, selected_reset);
        History {
            replid: self.ids.lock().0.clone(),
            offset,
            stream_db: 0,
        }
    }

    /// Whether a replica asking to continue history `replid` from byte
    /// `offset` (PSYNC's, one past what it has) can be sent the rest from
    /// the backlog: the id is this data's, or the previous one up to where
    /// it ended.
    pub fn can_continue(&self, replid: &str, offset: u64) -> bool {
        let ids = self.ids.lock().clone();
        let known = replid == ids.0
            || (replid == ids.1 && offset <= self.second_offset.load(Ordering::Relaxed));
        known && offset > 0 && self.backlog.holds_from(offset - 1)
    }

    fn set_state(&self, state: LinkState) {
        let mut link = self.link.lock();
        let now = crate::server::unix_ms() / 1000;
        link.state = state;
        self.link_up
            .store(state == LinkState::Connected, Ordering::Relaxed);
        match state {
            LinkState::Connected => link.down_since = None,
            _ => {
                link.down_since.get_or_insert(now);
            }
        }
    }

    fn note_io(&self) {
        self.link.lock().last_io = crate::server::unix_ms() / 1000;
    }

    /// The history a PSYNC asks to continue: replication id and the next
    /// offset wanted.
    fn history(&self) -> (String, u64) {
        let replid = self.ids.lock().0.clone();
        (replid, self.offset.load(Ordering::Relaxed) + 1)
    }

    /// At start-up, from the RDB file: the data is at this point of its
    /// history (a replica restarted asks to continue from there).
    pub fn resume_history(&self, history: History) {
        self.reset_history(history.replid, history.offset);
        self.stream_db.store(history.stream_db, Ordering::Relaxed);
    }

    /// Where the data is in its history, for the RDB file.
    pub fn history_now(&self) -> History {
        History {
            replid: self.ids.lock().0.clone(),
            offset: self.master_offset(),
            stream_db: self.stream_db.load(Ordering::Relaxed),
        }
    }

    /// After a full synchronisation: the data is the primary's `replid` at
    /// `offset`.
    fn reset_history(&self, replid: String, offset: u64) {
        *self.ids.lock() = (replid, "0".repeat(40));
        self.second_offset
            .store(NO_SECOND_OFFSET, Ordering::Relaxed);
        self.offset.store(offset, Ordering::Relaxed);
        self.stream_db.store(0, Ordering::Relaxed);
    }

    /// A primary that continued under a new id (after its own failover):
    /// the old one is kept as the second id.
    fn continue_as(&self, replid: String) {
        let mut ids = self.ids.lock();
        if ids.0 != replid {
            ids.1 = std::mem::replace(&mut ids.0, replid);
            let offset = self.offset.load(Ordering::Relaxed);
            self.second_offset.store(offset + 1, Ordering::Relaxed);
        }
    }

    fn advance(&self, bytes: u64) {
        self.offset.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// REPLICAOF: follows `primary` (`None`: becomes a primary), with expiry
/// held while a replica. False if `primary` is followed already.
pub fn follow(server: &crate::server::Server, primary: Option<Primary>) -> bool {
    let promoted = primary.is_none() && server.replication.is_replica();
    server.store.hold_expiry(primary.is_some());
    crate::log::set_replica(primary.is_some());
    if !server.replication.follow(primary) {
        return false;
    }
    // A promoted replica records from here at once, so the other replicas
    // of its old primary can continue from it (PSYNC with the old id).
    if promoted {
        server.replication.record_from_here(true);
    }
    true
}

/// Sends replicas a PING every `repl-ping-replica-period` seconds, in the
/// stream (it counts in the offset, as Redis's does), so a replica with no
/// writes to apply still sees its primary alive and does not time out.
pub async fn ping_replicas(server: std::sync::Arc<crate::server::Server>) {
    let mut last_ping = std::time::Instant::now();
    loop {
        crate::clock::sleep_until_next(std::time::Duration::from_secs(1)).await;
        let period = server
            .config
            .read()
            .value("repl-ping-replica-period")
            .parse()
            .unwrap_or(10);
        let backlog = &server.replication.backlog;
        if last_ping.elapsed().as_secs() < period || backlog.replicas().is_empty() {
            continue;
        }
        last_ping = std::time::Instant::now();
        backlog.record([(None, &[bytes::Bytes::from_static(b"PING")][..])]);
    }
}

/// A fresh replication id: 40 hex digits.
pub fn new_replid() -> String {
    (0..40)
        .map(|_| char::from_digit(rand::random::<u32>() % 16, 16).expect("digit below 16"))
        .collect()
}

//! Connected clients: each connection's own state ([`Client`]) and the
//! shared view of it ([`ClientHandle`]) that CLIENT LIST, CLIENT KILL and
//! INFO read from other threads.
//!
//! A connection updates its handle with relaxed atomic stores of its own
//! fields only, so no lock is taken per command; the registry's lock is
//! taken when a client connects, disconnects or is listed.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use keel_resp::Protocol;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// What the connection must do once the current reply is written.
pub enum AfterReply {
    /// QUIT, CLIENT KILL of oneself, SHUTDOWN: close the connection.
    Close,
    /// DEBUG SLEEP: pause this connection before its next command.
    Sleep(Duration),
    /// BLPOP and friends found nothing: wait to be served, time out or
    /// leave, then reply (see `crate::blocking`).
    Block(crate::blocking::Blocked),
}

/// One connection's private state, owned by its task.
pub struct Client {
    /// The shared view of this client.
    pub handle: Arc<ClientHandle>,
    /// Selected database.
    pub db: usize,
    /// Negotiated protocol.
    pub protocol: Protocol,
    /// False until AUTH succeeds, when a password is required.
    pub authenticated: bool,
    /// Set by a command that changes the connection after its reply.
    pub after_reply: Option<AfterReply>,
    /// MULTI/EXEC/WATCH state.
    pub tx: Transaction,
    /// Keys (database, key) that write commands named while clients are
    /// blocked: their waiters are served once the command (or EXEC)
    /// completes.
    pub ready: Vec<(usize, bytes::Bytes)>,
    /// Channels and patterns this connection subscribes to.
    pub subscriptions: Subscriptions,
}

/// A connection's pub/sub state.
#[derive(Default)]
pub struct Subscriptions {
    /// SUBSCRIBE channels.
    pub channels: std::collections::BTreeSet<bytes::Bytes>,
    /// PSUBSCRIBE patterns.
    pub patterns: std::collections::BTreeSet<bytes::Bytes>,
    /// Where publishers send this connection's messages, once it has
    /// subscribed to something.
    pub subscriber: Option<crate::pubsub::Subscriber>,
    /// The receiving end the connection loop waits on.
    pub inbox: Option<crate::pubsub::Inbox>,
}

impl Subscriptions {
    /// Channels plus patterns: the count Redis replies with.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Leaves every channel and pattern (RESET, disconnect).
    pub fn leave_all(&mut self, pubsub: &crate::pubsub::PubSub, client: u64) {
        use crate::pubsub::Kind;
        for channel in std::mem::take(&mut self.channels) {
            pubsub.unsubscribe(Kind::Channel, &channel, client);
        }
        for pattern in std::mem::take(&mut self.patterns) {
            pubsub.unsubscribe(Kind::Pattern, &pattern, client);
        }
    }
}

/// A connection's transaction state (see `cmd::multi`).
#[derive(Default)]
pub struct Transaction {
    /// Commands queued since MULTI; `None` outside MULTI.
    pub queued: Option<Vec<Vec<bytes::Bytes>>>,
    /// Memory the queue holds, charged to the client budget with the
    /// connection's other buffers.
    pub queued_bytes: usize,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub refused: bool,
    /// A queued command may grow memory, so EXEC is refused over
    /// maxmemory as that command would be.
    pub grows_memory: bool,
    /// True while EXEC runs the queue: blocking commands do not block.
    pub executing: bool,
    /// Watched keys: database, key, and whether the key was live when
    /// watched (a watched key that expires afterwards fails EXEC).
    pub watched: Vec<(usize, bytes::Bytes, bool)>,
    /// Set by the store when a watched key is written, expired or evicted.
    pub dirty: keel_store::WatchFlag,
}

impl Client {
    /// State of a new connection.
    pub fn new(handle: Arc<ClientHandle>, authenticated: bool) -> Client {
        Client {
            handle,
            db: 0,
            protocol: Protocol::Resp2,
            authenticated,
            after_reply: None,
            tx: Transaction::default(),
            ready: Vec::new(),
            subscriptions: Subscriptions::default(),
        }
    }
}

/// What other connections may see and do to a client.
pub struct ClientHandle {
    /// Unique, increasing id (CLIENT ID).
    pub id: u64,
    /// Peer address.
    pub addr: SocketAddr,
    /// Local address the client connected to.
    pub local_addr: SocketAddr,
    created_ms: u64,
    name: Mutex<String>,
    db: AtomicUsize,
    /// Command id + 1 of the last command; 0 before the first.
    last_command: AtomicUsize,
    last_interaction_ms: AtomicU64,
    protocol: AtomicU8,
    no_evict: AtomicBool,
    blocked: AtomicBool,
    /// Bytes waiting in the query buffer.
    pub query_buffer: AtomicUsize,
    /// Bytes waiting in the output buffer.
    pub output_buffer: AtomicUsize,
    killed: AtomicBool,
    kill_signal: Notify,
}

impl ClientHandle {
    /// Records the command about to run, for CLIENT LIST (`cmd=`, `idle=`,
    /// `db=`).
    pub fn note_command(&self, command_id: usize, db: usize, now_ms: u64) {
        self.last_command.store(command_id + 1, Ordering::Relaxed);
        self.db.store(db, Ordering::Relaxed);
        self.last_interaction_ms.store(now_ms, Ordering::Relaxed);
    }

    /// CLIENT SETNAME.
    pub fn set_name(&self, name: String) {
        *self.name.lock() = name;
    }

    /// CLIENT GETNAME.
    pub fn name(&self) -> String {
        self.name.lock().clone()
    }

    /// Records the protocol, for CLIENT LIST's `resp=`.
    pub fn set_protocol(&self, protocol: Protocol) {
        let v = if protocol == Protocol::Resp3 { 3 } else { 2 };
        self.protocol.store(v, Ordering::Relaxed);
    }

    /// CLIENT NO-EVICT.
    pub fn set_no_evict(&self, on: bool) {
        self.no_evict.store(on, Ordering::Relaxed);
    }

    /// Records whether the client waits in a blocking command, for CLIENT
    /// LIST's `b` flag.
    pub fn set_blocked(&self, on: bool) {
        self.blocked.store(on, Ordering::Relaxed);
    }

    /// Asks the connection to close; it notices at its next wait, or in
    /// the middle of one (a socket write to a client that does not read).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Relaxed);
        self.kill_signal.notify_waiters();
    }

    /// True once killed.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Relaxed)
    }

    /// Resolves when the client is killed. Any number of these may wait at
    /// once; each is registered before the flag is checked, so a kill in
    /// between is not missed.
    pub async fn killed(&self) {
        let signal = self.kill_signal.notified();
        tokio::pin!(signal);
        signal.as_mut().enable();
        if !self.is_killed() {
            signal.await;
        }
    }

    /// Seconds since the connection was accepted.
    pub fn age_seconds(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.created_ms) / 1000
    }

    /// Seconds since the last command.
    pub fn idle_seconds(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.last_interaction_ms.load(Ordering::Relaxed)) / 1000
    }

    /// One line of CLIENT LIST / CLIENT INFO, with Redis 7's fields.
    pub fn describe(&self, commands: &crate::cmd::Table, now_ms: u64) -> String {
        let cmd = match self.last_command.load(Ordering::Relaxed) {
            0 => "NULL",
            id => commands.specs()[id - 1].name,
        };
        // In Redis's order; N when there is none.
        let mut flags = String::new();
        if self.blocked.load(Ordering::Relaxed) {
            flags.push('b');
        }
        if self.no_evict.load(Ordering::Relaxed) {
            flags.push('e');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let qbuf = self.query_buffer.load(Ordering::Relaxed);
        let obuf = self.output_buffer.load(Ordering::Relaxed);
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={flags} db={} sub=0 psub=0 ssub=0 \
             multi=-1 qbuf={qbuf} qbuf-free=0 argv-mem=0 multi-mem=0 rbs={qbuf} rbp=0 obl={obuf} oll=0 \
             omem={obuf} tot-mem={} events=r cmd={cmd} user=default redir=-1 resp={}",
            self.id,
            self.addr,
            self.local_addr,
            self.name.lock(),
            self.age_seconds(now_ms),
            self.idle_seconds(now_ms),
            self.db.load(Ordering::Relaxed),
            qbuf + obuf,
            self.protocol.load(Ordering::Relaxed),
        )
    }
}

/// Every connected client, by id.
#[derive(Default)]
pub struct Clients {
    by_id: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    next_id: AtomicU64,
    all_gone: Notify,
}

impl Clients {
    /// Registers a new connection and returns its handle.
    pub fn register(
        &self,
        addr: SocketAddr,
        local_addr: SocketAddr,
        now_ms: u64,
    ) -> Arc<ClientHandle> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let handle = Arc::new(ClientHandle {
            id,
            addr,
            local_addr,
            created_ms: now_ms,
            name: Mutex::new(String::new()),
            db: AtomicUsize::new(0),
            last_command: AtomicUsize::new(0),
            last_interaction_ms: AtomicU64::new(now_ms),
            protocol: AtomicU8::new(2),
            no_evict: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            query_buffer: AtomicUsize::new(0),
            output_buffer: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            kill_signal: Notify::new(),
        });
        self.by_id.lock().insert(id, handle.clone());
        handle
    }

    /// Removes a closed connection.
    pub fn unregister(&self, id: u64) {
        let mut by_id = self.by_id.lock();
        by_id.remove(&id);
        if by_id.is_empty() {
            self.all_gone.notify_waiters();
        }
    }

    /// Handles of all clients, in id order.
    pub fn list(&self) -> Vec<Arc<ClientHandle>> {
        self.by_id.lock().values().cloned().collect()
    }

    /// Number of connected clients.
    pub fn count(&self) -> usize {
        self.by_id.lock().len()
    }

    /// Waits until every connection has closed or `limit` passes.
    pub async fn wait_all_closed(&self, limit: Duration) {
        let wait = async {
            loop {
                let gone = self.all_gone.notified();
                if self.count() == 0 {
                    return;
                }
                gone.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }
}

//! Connected clients: each connection's own state ([`Client`]) and the
//! shared view of it ([`ClientHandle`]) that CLIENT LIST, CLIENT KILL and
//! INFO read from other threads.
//!
//! A connection updates its handle with relaxed atomic stores of its own
//! fields only, so no lock is taken per command; the registry's lock is
//! taken when a client connects, disconnects or is listed.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use keel_resp::Protocol;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// How much of a subscriber's unread input publishers look at.
const PEEK_BYTES: usize = 4096;

/// What the connection must do once the current reply is written.
pub enum AfterReply {
    /// QUIT, CLIENT KILL of oneself, SHUTDOWN: close the connection.
    Close,
    /// DEBUG SLEEP: pause this connection before its next command.
    Sleep(Duration),
    /// BLPOP and friends found nothing: wait to be served, time out or
    /// leave, then reply (see `crate::blocking`).
    Block(crate::blocking::Blocked),
    /// A scripting command: its work runs on the script thread, and the
    /// reply follows when it is done (see `crate::scripting`).
    Script(crate::scripting::Job),
    /// The command reaches shards the running script holds: it runs again
    /// once the script ends, or answers BUSY once the script has run past
    /// `busy-reply-threshold` (see `crate::scripting::gate`).
    WaitForScript,
    /// SYNC or PSYNC: serve a replica (or `redis-cli --rdb`) from here
    /// (see `cmd/replication/sync.rs`).
    Sync(SyncStart),
    /// WAIT: reply how many replicas acknowledged the offset once enough
    /// did or the deadline passed (see `cmd/server/wait.rs`).
    WaitReplicas(WaitReplicas),
}

/// What a WAIT waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitReplicas {
    pub needed: usize,
    /// The replication offset the replicas must acknowledge.
    pub offset: u64,
    /// `None`: no timeout.
    pub deadline: Option<tokio::time::Instant>,
}

/// How a replica's synchronisation starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncStart {
    /// A snapshot first; `psync` answers `+FULLRESYNC` before it.
    Full { psync: bool },
    /// The stream from this offset, the backlog holding it (`+CONTINUE`
    /// was replied).
    Continue { from: u64 },
}

/// One connection's private state, owned by its task.
pub struct Client {
    /// The shared view of this client.
    pub handle: Arc<ClientHandle>,
    /// Selected database.
    pub db: usize,
    /// Negotiated protocol.
    pub protocol: Protocol,
    /// Its user, and whether it authenticated.
    pub acl: crate::acl::Session,
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
    /// CLIENT REPLY: whether replies are sent.
    pub reply_mode: ReplyMode,
    /// What REPLCONF said, for a peer that asks for a full sync.
    pub replica_handshake: ReplicaHandshake,
    /// This is the replication link's client, applying the primary's
    /// stream: its writes are not refused as a replica's clients' are.
    pub is_primary_link: bool,
    /// Cluster mode: its copy of the view, ASKING and READONLY.
    pub cluster: crate::cluster::Session,
}

/// What a replica (or `redis-cli --rdb`) told its primary with REPLCONF.
#[derive(Debug, Default, Clone)]
pub struct ReplicaHandshake {
    /// `listening-port`.
    pub listening_port: Option<i64>,
    /// `ip-address`: the address it announces (`replica-announce-ip`).
    pub ip_address: Option<String>,
    /// `capa eof`: it reads a diskless payload.
    pub capa_eof: bool,
    /// `rdb-only 1`: it wants the snapshot, not the stream after it.
    pub rdb_only: bool,
    /// `capa psync2`: it is told the replication id on `+CONTINUE`.
    pub capa_psync2: bool,
}

/// CLIENT REPLY's modes, as Redis's `CLIENT_REPLY_*` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Replies are sent.
    #[default]
    On,
    /// No reply is sent until CLIENT REPLY ON.
    Off,
    /// CLIENT REPLY SKIP ran: the next command's reply is dropped.
    SkipNext,
    /// This command's reply is dropped.
    Skip,
}

impl ReplyMode {
    /// True if replies written now are dropped.
    pub fn suppresses(self) -> bool {
        matches!(self, ReplyMode::Off | ReplyMode::Skip)
    }

    /// The mode for the next command, once this one's reply is settled.
    pub fn after_command(self) -> ReplyMode {
        match self {
            ReplyMode::Skip => ReplyMode::On,
            ReplyMode::SkipNext => ReplyMode::Skip,
            other => other,
        }
    }
}

/// A connection's pub/sub state.
#[derive(Default)]
pub struct Subscriptions {
    /// SUBSCRIBE channels.
    pub channels: std::collections::BTreeSet<bytes::Bytes>,
    /// PSUBSCRIBE patterns.
    pub patterns: std::collections::BTreeSet<bytes::Bytes>,
    /// SSUBSCRIBE shard channels.
    pub shard_channels: std::collections::BTreeSet<bytes::Bytes>,
    /// True once MONITOR made this connection a monitor.
    pub monitor: bool,
    /// Where publishers send this connection's messages, once it has
    /// subscribed to something.
    pub subscriber: Option<crate::pubsub::Subscriber>,
    /// The receiving end the connection loop waits on.
    pub inbox: Option<crate::pubsub::Inbox>,
}

impl Subscriptions {
    /// Channels plus patterns: the count (P)SUBSCRIBE replies with.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// True if subscribed to anything, shard channels included: a RESP2
    /// connection then takes only pub/sub commands.
    pub fn any(&self) -> bool {
        self.count() + self.shard_channels.len() > 0
    }

    /// The set of subscriptions of `kind`.
    pub fn of_kind(
        &mut self,
        kind: crate::pubsub::Kind,
    ) -> &mut std::collections::BTreeSet<bytes::Bytes> {
        use crate::pubsub::Kind;
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard_channels,
        }
    }

    /// Leaves every channel, pattern and shard channel, and stops
    /// monitoring (RESET, disconnect).
    pub fn leave_all(&mut self, pubsub: &crate::pubsub::PubSub, client: u64) {
        use crate::pubsub::Kind;
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in std::mem::take(self.of_kind(kind)) {
                pubsub.unsubscribe(kind, &name, client);
            }
        }
        if std::mem::take(&mut self.monitor) {
            pubsub.remove_monitor(client);
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
    pub fn new(handle: Arc<ClientHandle>, acl: crate::acl::Session) -> Client {
        Client {
            handle,
            db: 0,
            protocol: Protocol::Resp2,
            acl,
            after_reply: None,
            tx: Transaction::default(),
            ready: Vec::new(),
            subscriptions: Subscriptions::default(),
            reply_mode: ReplyMode::On,
            replica_handshake: ReplicaHandshake::default(),
            is_primary_link: false,
            cluster: Default::default(),
        }
    }

    /// Shows the connection's subscription counts and monitor mode in
    /// CLIENT LIST.
    pub fn note_subscriptions(&self) {
        let subs = &self.subscriptions;
        let counts = [
            subs.channels.len(),
            subs.patterns.len(),
            subs.shard_channels.len(),
        ];
        for (shown, count) in self.handle.subscriptions.iter().zip(counts) {
            shown.store(count, Ordering::Relaxed);
        }
        self.handle.monitor.store(subs.monitor, Ordering::Relaxed);
    }
}

/// Why CLIENT UNBLOCK ended a client's blocking command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unblock {
    /// Reply as if the command timed out.
    Timeout,
    /// Reply with Redis's `-UNBLOCKED` error.
    Error,
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
    /// The ACL user it is logged in as (CLIENT LIST's `user=`).
    user: Mutex<String>,
    db: AtomicUsize,
    /// Command id + 1 of the last command; 0 before the first.
    last_command: AtomicUsize,
    last_interaction_ms: AtomicU64,
    protocol: AtomicU8,
    no_evict: AtomicBool,
    no_touch: AtomicBool,
    blocked: AtomicBool,
    /// CLIENT UNBLOCK's request: 0 none, else 1 + [`Unblock`] as u8.
    unblock: AtomicU8,
    unblock_signal: Notify,
    /// SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE counts, for CLIENT LIST.
    subscriptions: [AtomicUsize; 3],
    /// The connection's socket, for publishers to look at what it sent
    /// and was not read yet (see [`ClientHandle::is_leaving`]); -1 when
    /// not known. Subscriptions end before the socket closes, so a
    /// publisher never looks at a socket that is gone.
    socket_fd: AtomicI32,
    /// What a subscribed connection read and has not run yet, for the same
    /// publishers: its requests leave the socket before they run.
    unexecuted: Mutex<bytes::Bytes>,
    monitor: AtomicBool,
    /// Whether this is a replica's link to its primary (CLIENT LIST's
    /// `M` flag, CLIENT KILL TYPE master).
    pub primary_link: std::sync::atomic::AtomicBool,
    /// Whether this is a replica fed by this server (CLIENT LIST's `S`
    /// flag, CLIENT KILL TYPE replica).
    pub replica: std::sync::atomic::AtomicBool,
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

    /// Records the user the connection logged in as.
    pub fn set_user(&self, user: &[u8]) {
        *self.user.lock() = String::from_utf8_lossy(user).into_owned();
    }

    /// The user the connection is logged in as.
    pub fn user(&self) -> String {
        self.user.lock().clone()
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

    /// CLIENT NO-TOUCH.
    pub fn set_no_touch(&self, on: bool) {
        self.no_touch.store(on, Ordering::Relaxed);
    }

    /// True while CLIENT NO-TOUCH is on.
    pub fn no_touch(&self) -> bool {
        self.no_touch.load(Ordering::Relaxed)
    }

    /// Records whether the client waits in a blocking command, for CLIENT
    /// LIST's `b` flag; a new wait forgets an earlier CLIENT UNBLOCK.
    pub fn set_blocked(&self, on: bool) {
        self.blocked.store(on, Ordering::Relaxed);
        self.unblock.store(0, Ordering::Relaxed);
    }

    /// Records the connection's socket (see [`ClientHandle::is_leaving`]).
    pub fn set_socket_fd(&self, fd: std::os::fd::RawFd) {
        self.socket_fd.store(fd, Ordering::Relaxed);
    }

    /// Forgets what [`ClientHandle::expose_unread`] showed, once it ran.
    pub fn clear_unexecuted(&self) {
        *self.unexecuted.lock() = bytes::Bytes::new();
    }

    /// Before a subscribed connection reads its socket: shows publishers
    /// what it has not run yet, `read_buf` and what the socket holds, so
    /// that its requests are visible to [`ClientHandle::is_leaving`] at
    /// every moment until they run.
    pub fn expose_unread(&self, read_buf: &[u8]) {
        let mut ahead = [0u8; PEEK_BYTES];
        let ahead = self.peek(&mut ahead);
        let mut unexecuted = Vec::with_capacity(read_buf.len() + ahead.len());
        unexecuted.extend_from_slice(read_buf);
        unexecuted.extend_from_slice(ahead);
        *self.unexecuted.lock() = unexecuted.into();
    }

    /// What the socket holds unread, up to `buf`'s length, left in place.
    fn peek<'b>(&self, buf: &'b mut [u8]) -> &'b [u8] {
        let fd = self.socket_fd.load(Ordering::Relaxed);
        if fd < 0 {
            return &[];
        }
        // SAFETY: `fd` is this connection's socket, open for as long as the
        // connection can be found among a channel's subscribers; the buffer
        // is valid for its length.
        let peeked = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        match usize::try_from(peeked) {
            Ok(len) => &buf[..len],
            Err(_) => &[],
        }
    }

    /// True if requests the client sent and keel has not run yet leave
    /// the subscription `name` of `kind`: (P|S)UNSUBSCRIBE naming it or
    /// naming nothing, RESET or QUIT. Redis runs requests in the order they
    /// arrive, so a message published after such a request arrived does
    /// not reach the client; keel's connections run in parallel, so a
    /// publisher looks at the subscriber's unread bytes (a peek, which
    /// leaves them for the connection) to keep that order. One syscall
    /// per subscriber a message reaches.
    pub fn is_leaving(&self, kind: crate::pubsub::Kind, name: &[u8]) -> bool {
        use crate::pubsub::Kind;
        // The socket first: bytes leave it for `unexecuted` (see
        // `expose_unread`), never the other way.
        let mut unread = [0u8; PEEK_BYTES];
        let peeked = self.peek(&mut unread);
        let mut buf = bytes::BytesMut::from(&self.unexecuted.lock()[..]);
        buf.extend_from_slice(peeked);
        let mut decoder = keel_resp::RequestDecoder::default();
        let limits = keel_resp::Limits {
            max_bulk_len: buf.len(),
            authenticated: true,
        };
        let leaves = |args: &[bytes::Bytes]| {
            let command = &args[0];
            let named = |c: &str| command.eq_ignore_ascii_case(c.as_bytes());
            let leaving_kind = match kind {
                Kind::Channel => named("unsubscribe"),
                Kind::Pattern => named("punsubscribe"),
                Kind::Shard => named("sunsubscribe"),
            };
            named("reset")
                || named("quit")
                || (leaving_kind && (args.len() == 1 || args[1..].iter().any(|a| a == name)))
        };
        while let Ok(Some(args)) = decoder.next(&mut buf, &limits) {
            if !args.is_empty() && leaves(&args) {
                return true;
            }
        }
        false
    }

    /// CLIENT UNBLOCK: ends the client's blocking command, if it is in one.
    pub fn request_unblock(&self, how: Unblock) -> bool {
        if !self.blocked.load(Ordering::Relaxed) {
            return false;
        }
        self.unblock.store(1 + how as u8, Ordering::Relaxed);
        self.unblock_signal.notify_waiters();
        true
    }

    /// Resolves when CLIENT UNBLOCK ends the client's blocking command,
    /// with how it asked the command to end.
    pub async fn unblocked(&self) -> Unblock {
        loop {
            let signal = self.unblock_signal.notified();
            tokio::pin!(signal);
            signal.as_mut().enable();
            match self.unblock.load(Ordering::Relaxed) {
                0 => signal.await,
                1 => return Unblock::Timeout,
                _ => return Unblock::Error,
            }
        }
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
    /// between is not missed. The connection's own is polled at every
    /// wake-up of its loop: polling a `Notified` again takes the signal's
    /// lock to refresh its waker, some 130 instructions twice per request
    /// at P=1, so the watch refreshes it only when polled for another task
    /// and otherwise reads the flag.
    pub fn killed(&self) -> KillWatch<'_> {
        let mut signal = Box::pin(self.kill_signal.notified());
        signal.as_mut().enable();
        KillWatch {
            handle: self,
            signal,
            registered_for: None,
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
        let [sub, psub, ssub] = self
            .subscriptions
            .each_ref()
            .map(|n| n.load(Ordering::Relaxed));
        let mut flags = String::new();
        if self.primary_link.load(Ordering::Relaxed) {
            flags.push('M');
        }
        if self.replica.load(Ordering::Relaxed) {
            flags.push('S');
        }
        if self.monitor.load(Ordering::Relaxed) {
            flags.push('O');
        }
        if sub + psub + ssub > 0 {
            flags.push('P');
        }
        if self.blocked.load(Ordering::Relaxed) {
            flags.push('b');
        }
        if self.no_evict.load(Ordering::Relaxed) {
            flags.push('e');
        }
        if self.no_touch() {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let qbuf = self.query_buffer.load(Ordering::Relaxed);
        let obuf = self.output_buffer.load(Ordering::Relaxed);
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={flags} db={} sub={sub} psub={psub} ssub={ssub} \
             multi=-1 qbuf={qbuf} qbuf-free=0 argv-mem=0 multi-mem=0 rbs={qbuf} rbp=0 obl={obuf} oll=0 \
             omem={obuf} tot-mem={} events=r cmd={cmd} user={} redir=-1 resp={}",
            self.id,
            self.addr,
            self.local_addr,
            self.name.lock(),
            self.age_seconds(now_ms),
            self.idle_seconds(now_ms),
            self.db.load(Ordering::Relaxed),
            qbuf + obuf,
            self.user.lock(),
            self.protocol.load(Ordering::Relaxed),
        )
    }
}

impl ClientHandle {
    fn new(id: u64, addr: SocketAddr, local_addr: SocketAddr, now_ms: u64) -> ClientHandle {
        ClientHandle {
            id,
            addr,
            local_addr,
            created_ms: now_ms,
            name: Mutex::new(String::new()),
            user: Mutex::new("default".into()),
            db: AtomicUsize::new(0),
            last_command: AtomicUsize::new(0),
            last_interaction_ms: AtomicU64::new(now_ms),
            protocol: AtomicU8::new(2),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            unblock: AtomicU8::new(0),
            unblock_signal: Notify::new(),
            subscriptions: Default::default(),
            socket_fd: AtomicI32::new(-1),
            unexecuted: Mutex::new(bytes::Bytes::new()),
            monitor: AtomicBool::new(false),
            primary_link: std::sync::atomic::AtomicBool::new(false),
            replica: std::sync::atomic::AtomicBool::new(false),
            query_buffer: AtomicUsize::new(0),
            output_buffer: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            kill_signal: Notify::new(),
        }
    }

    /// A handle for a client that is no connection and is not listed
    /// (the client scripts run their commands as): id 0, no address.
    pub fn unlisted() -> ClientHandle {
        let nowhere = SocketAddr::from(([0, 0, 0, 0], 0));
        ClientHandle::new(0, nowhere, nowhere, 0)
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
        let handle = Arc::new(ClientHandle::new(id, addr, local_addr, now_ms));
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

/// See [`ClientHandle::killed`].
pub struct KillWatch<'a> {
    handle: &'a ClientHandle,
    signal: std::pin::Pin<Box<tokio::sync::futures::Notified<'a>>>,
    /// The waker the signal holds, once it holds one.
    registered_for: Option<std::task::Waker>,
}

impl std::future::Future for KillWatch<'_> {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        use std::task::Poll;
        // `kill` sets the flag before it wakes the waiters.
        if self.handle.is_killed() {
            return Poll::Ready(());
        }
        let watch = &mut *self;
        if (watch.registered_for.as_ref()).is_some_and(|waker| waker.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        match watch.signal.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending => {
                watch.registered_for = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_kill_wait_polled_again_and_again_wakes_its_task_at_the_kill() {
        let addr: SocketAddr = "127.0.0.1:6379".parse().unwrap();
        let handle = Arc::new(ClientHandle::new(1, addr, addr, 0));
        let watched = handle.clone();
        let waiting = tokio::spawn(async move {
            let watch = watched.killed();
            tokio::pin!(watch);
            // Polled again and again while the task has other work...
            for _ in 0..5 {
                tokio::select! {
                    biased;
                    _ = &mut watch => return false,
                    _ = tokio::task::yield_now() => {}
                }
            }
            // ...then the task sleeps on it alone.
            watch.await;
            true
        });
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished());
        handle.kill();
        let slept = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the kill wakes the task")
            .unwrap();
        assert!(slept);
    }

    #[tokio::test]
    async fn a_kill_wait_made_after_the_kill_is_ready_at_once() {
        let addr: SocketAddr = "127.0.0.1:6379".parse().unwrap();
        let handle = ClientHandle::new(1, addr, addr, 0);
        handle.kill();
        tokio::time::timeout(Duration::from_secs(5), handle.killed())
            .await
            .expect("ready at once");
    }
}

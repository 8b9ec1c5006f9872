//! One client connection: read, decode, execute, reply.
//!
//! Each read is followed by executing every complete request in the
//! buffer, in order, with all their replies gathered into one output buffer
//! that is written once — pipelining costs one syscall per batch, not per
//! command. A protocol error gets Redis's reply and closes this connection
//! only; nothing else is affected. A killed connection (CLIENT KILL, server
//! shutdown) answers the requests it had already read, then closes.
//!
//! A batch's replies are sent after the other connections ready at the
//! same time have run their batches: the task yields before it writes, as
//! Redis reads and runs every ready client before it writes any reply.
//! Each send wakes its client, and a client already woken by an earlier
//! send takes the next one cheaply; sends spread between reads and
//! executions found the client asleep far more often, and on this
//! machine those wake-ups took 27% of keel's CPU at P=16 against 7% of
//! Redis's (bench/results/2026-11-26-cpu-per-op.md).
//!
//! Buffers are charged to the client budget (`client_budget.rs`): a read
//! that would grow them past it waits, which is keel's backpressure.
//!
//! A new connection's first requests are served by the acceptor, which
//! then hands the connection to a worker for good. The acceptor is idle
//! between connections, so a new client (a health check's PING, an
//! application reconnecting) gets its first reply at once instead of
//! waiting for a busy worker to take it in and then to read it. The
//! acceptor's share is bounded: one read of at most a read chunk, and of
//! that only quick requests (`cmd::is_quick`: Redis's `fast` commands
//! that never block); the first other request, and everything after that
//! first read, runs on the worker. The connection's state (selected
//! database, protocol, authentication, a MULTI queue, buffered bytes)
//! moves with it, so the client sees one connection.
//!
//! New and light connections are served ahead of heavy ones. A worker runs
//! its connections from one first-in first-out queue, and a connection's
//! task joins its back whenever its socket has data: with thousands of
//! connections pipelining large writes, a new connection's PING waited
//! behind one batch of each of them, 100 ms and more. So a connection that
//! moved more than a read chunk since its previous read (requests read plus
//! replies sent) is heavy, and its next batch is read and executed only in
//! one of its worker's heavy lane turns (`HEAVY_LANE_TURNS`, first come
//! first served). A connection with a turn goes to the back of the queue
//! holding it, and gives it back before anything that can wait on its
//! client (sending replies, a blocking command), so turns are only held by
//! tasks queued to run or running: at most that many heavy batches are
//! ahead of any light request, and heavy connections waiting for a turn are
//! parked outside the queue. The trade-off: heavy connections together get that
//! many batches per pass of the queue however many light ones there are,
//! and each heavy batch costs one more trip through the queue. Replies stay
//! in order (a connection still runs its own requests one after another)
//! and the client budget is untouched: a connection waits for the budget
//! before it waits for a turn, never while holding one.

mod feed;
mod stream;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use keel_resp::{Limits, RequestDecoder, Writer, MAX_AHEAD};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::blocking::Blocked;
use crate::client::{AfterReply, Client, Unblock};
use crate::client_budget::CONNECTION_OVERHEAD_BYTES;
use crate::clock::Now;
use crate::server::{unix_ms, Server};
use crate::stats::{Stats, Work};
use crate::{cmd, verbose, warning};
pub use stream::{read_plaintext, receive_tls, send_plaintext, send_tls, Stream};

/// Read space a connection takes when it has data to read and tops up to:
/// enough for typical requests, small enough for tens of thousands of
/// connections.
const READ_CHUNK: usize = 4 * 1024;
/// A buffer grown past this by a burst is released once it is empty, so a
/// connection's memory follows its current traffic, not its largest ever.
const KEEP_CAPACITY: usize = 64 * 1024;
/// What an empty buffer keeps once the client budget is half used: nothing.
/// Spare capacity held by connections between requests would otherwise fill
/// the budget (2,000 connections keeping 32 KB each are 64 MB; 10,000 idle
/// ones keeping one read chunk are 40 MB) and pause connections that have
/// requests to read. A connection asks for read space again once it has
/// data to read.
const KEEP_CAPACITY_UNDER_PRESSURE: usize = 0;
/// Replies beyond this are sent before the rest of a batch is executed, so
/// a pipeline of large replies does not pile up in memory.
const FLUSH_THRESHOLD: usize = 1024 * 1024;
/// A connection that read and wrote more than this between two reads is
/// heavy: its batches take turns in the heavy lane. More than one read
/// chunk, so ordinary requests and small pipelines never wait for a turn.
const HEAVY_TRAFFIC_BYTES: usize = READ_CHUNK;
/// How often a connection paused for the client budget looks whether its
/// peer has gone: the delay before a closed client's buffers are released.
const PEER_CLOSED_POLL: Duration = Duration::from_secs(1);
/// How often a connection waiting for its script job looks whether
/// another script has run past `busy-reply-threshold`.
const SCRIPT_BUSY_POLL: Duration = Duration::from_millis(20);

/// Heavy batches a worker lets wait in its run queue at once: a light
/// connection's request waits behind at most this many per pass of the
/// queue, and heavy connections together still get this many batches per
/// pass however many light connections there are.
const HEAVY_LANE_TURNS: usize = 16;

/// A worker's heavy lane: the turns its heavy connections take, first come
/// first served, to read and execute a batch. One per worker, because a
/// connection waits in its own worker's run queue.
pub struct HeavyLane {
    turns: Semaphore,
}

impl Default for HeavyLane {
    fn default() -> HeavyLane {
        HeavyLane {
            turns: Semaphore::new(HEAVY_LANE_TURNS),
        }
    }
}

impl HeavyLane {
    /// Waits for a turn, counting the wait when every turn was taken. Either
    /// way the task goes to the back of the run queue holding its turn, so
    /// what already waits there runs before this heavy batch.
    async fn take_turn(&self, stats: &Stats) -> SemaphorePermit<'_> {
        if let Ok(turn) = self.turns.try_acquire() {
            tokio::task::yield_now().await;
            return turn;
        }
        stats.count_heavy_lane_wait();
        self.turns
            .acquire()
            .await
            .expect("the heavy lane is never closed")
    }
}

/// A connection the acceptor has served its first requests on, on its way
/// to the worker that serves it from now on: the socket and everything
/// read or decided on it so far.
pub struct Handover {
    socket: std::net::TcpStream,
    /// Its TLS session, on `tls-port`.
    tls: Option<Box<rustls::ServerConnection>>,
    client: Client,
    progress: Progress,
}

/// What a connection has read and not yet run, and what counts towards its
/// next read's traffic: the part of a connection that moves with it.
#[derive(Default)]
struct Progress {
    read_buf: BytesMut,
    /// Bytes of the one allocation `read_buf` lives in, what the client
    /// budget is charged for it. `read_buf.capacity()` leaves out the bytes
    /// already consumed from its front, which stay allocated until the
    /// space is reclaimed: with 5,000 connections pipelining 16 KB writes,
    /// charging that left some 140 MB outside the budget.
    read_allocation: usize,
    decoder: RequestDecoder,
    /// A request the acceptor decoded but leaves to the worker (not quick).
    unexecuted: Option<Vec<Bytes>>,
    /// Reply bytes sent since the latest read, which count towards the
    /// connection's traffic at the next one.
    written_since_read: usize,
}

impl Progress {
    /// Makes room in the read buffer for `growth` more bytes in the space
    /// consumed from its front, if nothing else refers to it: memory
    /// already charged. False if that space cannot be had.
    fn reclaim_read_room(&mut self, growth: usize) -> bool {
        self.read_buf.try_reclaim(growth)
    }

    /// Makes room in the read buffer for `growth` more bytes in a new
    /// allocation the unread bytes move to. An allocation is never grown in
    /// place, so `read_allocation` stays exact.
    fn grow_read_room(&mut self, growth: usize) {
        self.reallocate_read_buf(self.read_buf.len() + growth);
    }

    /// Moves the unread bytes into a new allocation of `capacity` bytes.
    fn reallocate_read_buf(&mut self, capacity: usize) {
        let mut fresh = BytesMut::with_capacity(capacity);
        fresh.extend_from_slice(&self.read_buf);
        self.read_buf = fresh;
        self.read_allocation = capacity;
    }
}

/// Where a connection is being served.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// The acceptor, for its first read (see the module comment).
    Acceptor,
    /// Its worker, with that worker's heavy lane.
    Worker(&'a HeavyLane),
}

/// How a connection's loop ended.
enum Ended {
    /// The connection is done: closed by either side, killed, or failed.
    Closed,
    /// The acceptor is done with it; a worker takes over.
    HandOver,
}

/// At the acceptor: registers a new connection and serves its first quick
/// requests (see the module comment). Returns the connection for a worker,
/// or `None` if it ended here.
pub async fn welcome(
    server: Arc<Server>,
    mut socket: Stream,
    addr: SocketAddr,
) -> Option<Handover> {
    if over_maxclients(&server) {
        refuse_over_maxclients(&server, &mut socket, addr);
        return None;
    }
    if refused_by_protected_mode(&server, addr) {
        socket.try_send(PROTECTED_MODE_DENIED);
        server.stats.count_rejected_connection();
        verbose!("Refused client addr={addr}: protected mode");
        return None;
    }
    let local = socket.socket().local_addr().unwrap_or(addr);
    let handle = server.clients.register(addr, local, unix_ms());
    if server.is_shutting_down() {
        server.clients.unregister(handle.id);
        return None;
    }
    let keepalive = server.config.read().tcp_keepalive;
    let _ = socket.socket().set_nodelay(true);
    if keepalive > 0 {
        let ka = socket2::TcpKeepalive::new().with_time(Duration::from_secs(keepalive));
        let _ = socket2::SockRef::from(socket.socket()).set_tcp_keepalive(&ka);
    }
    let mut client = Client::new(handle, crate::acl::Session::new(&server.acl));
    let progress = Progress::default();
    let (ended, progress) = run(&server, &mut socket, &mut client, progress, Place::Acceptor).await;
    match ended.and_then(|ended| match ended {
        Ended::HandOver => {
            let (socket, tls) = socket.into_parts();
            Ok(Some((socket.into_std()?, tls)))
        }
        Ended::Closed => Ok(None),
    }) {
        Ok(Some((socket, tls))) => {
            return Some(Handover {
                socket,
                tls,
                client,
                progress,
            })
        }
        Ok(None) => {}
        Err(e) => verbose!("Client id={} addr={addr} closed: {e}", client.handle.id),
    }
    close(&server, &mut client);
    None
}

/// Redis's reply to a client that protected mode refuses.
const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Protected mode (as Redis 7): while the default user has no password,
/// only clients on the loopback interface are served.
fn refused_by_protected_mode(server: &Server, addr: SocketAddr) -> bool {
    let config = server.config.read();
    let default_has_no_password = server.acl.users().default_user().nopass();
    config.protected_mode && default_has_no_password && !crate::config::is_local(addr)
}

/// Whether the connected clients and the TLS handshakes under way fill
/// `maxclients`: one more connection is refused.
pub fn over_maxclients(server: &Server) -> bool {
    let maxclients = server.hot.maxclients.load(Ordering::Relaxed);
    (server.clients.count() + server.tls.handshaking()) as u64 >= maxclients
}

/// Answers a connection past `maxclients` with Redis's error and closes
/// it. The reply is written only if the socket takes it at once: the
/// acceptor never waits on a client it refuses.
fn refuse_over_maxclients(server: &Server, socket: &mut Stream, addr: SocketAddr) {
    socket.try_send(b"-ERR max number of clients reached\r\n");
    server.stats.count_rejected_connection();
    verbose!("Refused client addr={addr}: max number of clients reached");
}

/// On a worker: serves a connection handed over by the acceptor until it
/// closes, is killed, or the server stops. `lane` is the worker's heavy
/// lane.
pub async fn serve(server: Arc<Server>, lane: Arc<HeavyLane>, handover: Handover) {
    let Handover {
        socket,
        tls,
        mut client,
        progress,
    } = handover;
    let addr = client.handle.addr;
    let result = match TcpStream::from_std(socket) {
        Ok(socket) => {
            let mut socket = Stream::from_parts(socket, tls);
            let place = Place::Worker(&lane);
            run(&server, &mut socket, &mut client, progress, place)
                .await
                .0
        }
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        verbose!("Client id={} addr={addr} closed: {e}", client.handle.id);
    }
    close(&server, &mut client);
}

/// Serves the connection at `place` until it ends there; returns how, and
/// what it had read and not yet run.
async fn run(
    server: &Server,
    socket: &mut Stream,
    client: &mut Client,
    progress: Progress,
    place: Place<'_>,
) -> (std::io::Result<Ended>, Progress) {
    let mut connection = Connection {
        server,
        socket,
        client,
        progress,
        write_buf: BytesMut::new(),
        charged: 0,
        over_soft_limit_since: None,
        place,
        lane_turn: None,
        heavy: false,
        blocked_bytes: 0,
    };
    let ended = connection.run().await;
    (ended, std::mem::take(&mut connection.progress))
}

/// The end of a connection, wherever it was served.
fn close(server: &Server, client: &mut Client) {
    if client
        .subscriptions
        .inbox
        .as_ref()
        .is_some_and(|inbox| inbox.over_limit())
    {
        let handle = &client.handle;
        warning!(
            "Client id={} addr={} closed for overcoming of output buffer limits (pubsub).",
            handle.id,
            handle.addr
        );
        server.stats.count_output_limit_disconnection();
    }
    cmd::unwatch_all(server, client, unix_ms());
    server.clients.unregister(client.handle.id);
}

/// Waits until `socket` has data or its peer closed; `None` if `idle_secs`
/// (0: no limit) pass first.
async fn readable_within(socket: &Stream, idle_secs: u64) -> Option<std::io::Result<()>> {
    match idle_secs {
        0 => Some(socket.readable().await),
        secs => (tokio::time::timeout(Duration::from_secs(secs), socket.readable()).await).ok(),
    }
}

/// Resolves once the peer has closed the connection or it failed: what a
/// connection paused for the client budget watches for, since it reads
/// nothing that would show it. (A client that only shut down its sending
/// side while paused is closed too: what it sent cannot be read before the
/// budget has room.)
async fn peer_closed(socket: &TcpStream) -> std::io::Result<()> {
    use tokio::io::Interest;
    loop {
        let ready = socket.ready(Interest::READABLE | Interest::ERROR).await?;
        if ready.is_read_closed() || ready.is_error() {
            return Ok(());
        }
        // Plain readability: data the connection reads once admitted. The
        // readiness stays set until then (clearing it would make that read
        // wait for an event that already came), so look again later
        // instead of spinning on it.
        tokio::time::sleep(PEER_CLOSED_POLL).await;
    }
}

struct Connection<'a> {
    server: &'a Server,
    socket: &'a mut Stream,
    client: &'a mut Client,
    progress: Progress,
    write_buf: BytesMut,
    /// Bytes this connection has charged to the client budget.
    charged: usize,
    /// When the reply backlog went over the soft output limit.
    over_soft_limit_since: Option<Instant>,
    place: Place<'a>,
    /// The lane turn held while a heavy batch is read and executed.
    lane_turn: Option<SemaphorePermit<'a>>,
    /// Whether the latest read made this connection heavy (see
    /// [`HEAVY_TRAFFIC_BYTES`]).
    heavy: bool,
    /// What a blocked command's arguments hold while it waits.
    blocked_bytes: usize,
}

impl Drop for Connection<'_> {
    fn drop(&mut self) {
        let budget = &self.server.client_budget;
        budget.recharge(self.charged, 0);
        budget.release_token(self.client.handle.id);
        let id = self.client.handle.id;
        self.client.subscriptions.leave_all(&self.server.pubsub, id);
    }
}

/// What the connection loop woke up for.
enum Woken {
    /// The socket was read (`None`: the idle timeout passed first).
    Read(std::io::Result<Option<usize>>),
    /// A published message arrived for this subscriber.
    Message(crate::pubsub::Message),
}

/// How a batch of requests ended.
enum Batch {
    /// Every complete request ran (at the acceptor: every one up to the
    /// first that is not quick); read more.
    Done,
    /// The connection must close once replies are written.
    Close,
}

impl<'a> Connection<'a> {
    async fn run(&mut self) -> std::io::Result<Ended> {
        let handle = self.client.handle.clone();
        // Publishers peek at a subscriber's unread requests (see
        // `ClientHandle::is_leaving`); a TLS socket shows them only
        // encrypted.
        let fd = match self.socket.is_tls() {
            true => -1,
            false => std::os::fd::AsRawFd::as_raw_fd(self.socket.socket()),
        };
        handle.set_socket_fd(fd);
        // One wait for the whole connection: CLIENT KILL and shutdown both
        // end it through this signal.
        let killed = handle.killed();
        tokio::pin!(killed);
        self.recharge();
        let mut has_read = false;
        let mut exposed_input = false;
        loop {
            let batch = self.execute_buffered(killed.as_mut()).await?;
            if std::mem::take(&mut exposed_input) {
                handle.clear_unexecuted();
            }
            if !self.write_buf.is_empty() {
                // Replies go out once every connection ready now has run
                // its batch (see the module comment).
                self.leave_lane();
                tokio::task::yield_now().await;
            }
            self.flush().await?;
            if matches!(batch, Batch::Close) || handle.is_killed() {
                return Ok(Ended::Closed);
            }
            if has_read && matches!(self.place, Place::Acceptor) {
                return Ok(Ended::HandOver);
            }
            let keep = self.keep_capacity();
            if self.progress.read_buf.is_empty() && self.progress.read_allocation > keep {
                self.progress.reallocate_read_buf(READ_CHUNK.min(keep));
                self.recharge();
            }
            let (read_buf, decoder) = (&self.progress.read_buf, &self.progress.decoder);
            let budget = &self.server.client_budget;
            let partial = decoder.is_mid_request() || !read_buf.is_empty();
            if !partial {
                budget.release_token(handle.id);
            }
            // Room for what a big argument still needs beyond what is
            // buffered of it, or at least a chunk; a buffer that keeps filling
            // up doubles, as a pipeline needs. (Asking for the whole argument
            // again on every read reallocated a 10 MB argument six times.)
            let missing = decoder.bytes_wanted().saturating_sub(read_buf.len());
            let wanted = missing.max(READ_CHUNK / 4);
            let growth = wanted.max(read_buf.len()).max(READ_CHUNK);
            let may_take_token = self.client.tx.queued.is_none();
            // A new connection's first read, at the acceptor, never waits for
            // the budget: its client (a health check, an application
            // reconnecting) gets its first reply at once even when the
            // budget is full. That is one read chunk per connection past
            // the budget at most, the overshoot the budget already allows.
            let first_read = matches!(self.place, Place::Acceptor);
            // Subscribers and monitors wait for messages, not requests:
            // Redis exempts them from the idle timeout.
            let subs = &self.client.subscriptions;
            let subscribed = subs.any();
            let timeout = match subscribed || subs.monitor {
                false => self.server.hot.timeout_secs.load(Ordering::Relaxed),
                true => 0,
            };
            let (lane, stats) = (self.heavy_lane(), &self.server.stats);
            let socket = &mut *self.socket;
            let (progress, charged) = (&mut self.progress, &mut self.charged);
            let (lane_turn, id) = (&mut self.lane_turn, handle.id);
            let exposed_input = &mut exposed_input;
            let handle = &*handle;
            // Read space is asked of the client budget only once there is
            // data to read, so an idle connection holds none while it waits
            // (see `KEEP_CAPACITY_UNDER_PRESSURE`). A heavy connection
            // takes its turn after that, so a client that sends nothing, or
            // one paused for the budget, never holds one.
            let read = async move {
                loop {
                    let Some(readable) = readable_within(&*socket, timeout).await else {
                        return Ok(None);
                    };
                    readable?;
                    if progress.read_buf.capacity() - progress.read_buf.len() < wanted {
                        // Reused space adds nothing to the budget, but a
                        // connection still waits while the budget is over
                        // (its MULTI queue, say, may have put it there).
                        let reclaimed = progress.reclaim_read_room(growth);
                        // Readiness can be reported with nothing to read yet
                        // (a new socket is); only data is worth new read
                        // space. Reused space needs no look (a peek is a
                        // syscall): the read finds out.
                        if !reclaimed && !socket.has_data()? {
                            continue;
                        }
                        let more = if reclaimed { 0 } else { growth };
                        let pause = match first_read {
                            true => None,
                            // Boxed: this wait is rare (once a buffer's
                            // room is used up) and its futures take some
                            // 450 bytes, which would otherwise size this
                            // read future, built and moved on every wait
                            // for data. Biased: admission is almost always
                            // at once, and a `peer_closed` polled first on a
                            // readable socket arms a timer, whose
                            // registration writes the worker's wake-up
                            // descriptor (a syscall, and a spurious
                            // wake-up) on every read that grows.
                            false => {
                                let admitted = Box::pin(async {
                                    tokio::select! {
                                        biased;
                                        pause = budget.admit(id, more, may_take_token) => Ok(pause),
                                        closed = peer_closed(socket.socket()) => Err(closed),
                                    }
                                });
                                match admitted.await {
                                    Ok(pause) => pause,
                                    Err(closed) => return closed.map(|()| Some(0)),
                                }
                            }
                        };
                        if let Some(pause) = pause {
                            stats.record_work(Work::BackpressurePause, pause);
                        }
                        if !reclaimed {
                            let before = progress.read_allocation;
                            progress.grow_read_room(growth);
                            let now = *charged - before + progress.read_allocation;
                            budget.recharge(*charged, now);
                            *charged = now;
                        }
                    }
                    if let Some(lane) = lane {
                        *lane_turn = Some(lane.take_turn(stats).await);
                    }
                    // A subscriber's requests stay visible to publishers
                    // until they run (see `ClientHandle::is_leaving`).
                    if subscribed {
                        handle.expose_unread(&progress.read_buf);
                        *exposed_input = true;
                    }
                    match socket.read_available(&mut progress.read_buf) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => *lane_turn = None,
                        read => return read.map(Some),
                    }
                }
            };
            let inbox = self.client.subscriptions.inbox.as_mut();
            let message = async move {
                match inbox {
                    Some(inbox) => inbox.next().await,
                    None => std::future::pending().await,
                }
            };
            let woken = tokio::select! {
                biased;
                _ = &mut killed => return Ok(Ended::Closed),
                Some(message) = message => Woken::Message(message),
                r = read => Woken::Read(r),
            };
            let n = match woken {
                Woken::Message(message) => {
                    self.deliver(message).await?;
                    continue;
                }
                Woken::Read(read) => match read? {
                    Some(n) => n,
                    None => {
                        verbose!("Closing idle client id={}", handle.id);
                        return Ok(Ended::Closed);
                    }
                },
            };
            if n == 0 {
                return Ok(Ended::Closed);
            }
            has_read = true;
            // This read and the replies before it class the batches to come.
            let written = std::mem::take(&mut self.progress.written_since_read);
            self.heavy = n + written > HEAVY_TRAFFIC_BYTES;
            self.server.stats.count_input(n);
            // A request's arguments already decoded count as much as the
            // bytes still to decode, as Redis counts a client's argv.
            let buffered = self.progress.read_buf.len() + self.progress.decoder.held_bytes();
            handle.query_buffer.store(buffered, Ordering::Relaxed);
            let limit = self.server.hot.query_buffer_limit.load(Ordering::Relaxed);
            if buffered as u64 > limit {
                warning!(
                    "Closing client that reached max query buffer length: id={} addr={} (qbuf={buffered})",
                    handle.id,
                    handle.addr,
                );
                return Ok(Ended::Closed);
            }
        }
    }

    /// The heavy lane this connection's next batch must take a turn in:
    /// its worker's, if its latest read made it heavy. None at the
    /// acceptor, which reads only one chunk.
    fn heavy_lane(&self) -> Option<&'a HeavyLane> {
        match self.place {
            Place::Worker(lane) if self.heavy => Some(lane),
            _ => None,
        }
    }

    /// Writes a published message, and any others already waiting, as
    /// pushes (`message` / `pmessage` / `smessage`) or, for a monitor, as
    /// status lines, then sends them. (A subscriber that falls too far
    /// behind is disconnected by its publishers, see `crate::pubsub`.)
    /// Under CLIENT REPLY OFF monitor lines are dropped and pushes are
    /// not, as in Redis.
    async fn deliver(&mut self, first: crate::pubsub::Message) -> std::io::Result<()> {
        use crate::pubsub::Delivery;
        let mut next = Some(first);
        while let Some(message) = next {
            let mut w = Writer::new(&mut self.write_buf, self.client.protocol);
            let suppressed = self.client.reply_mode.suppresses();
            match &message.delivery {
                Delivery::Monitor if suppressed => {}
                // A line is ASCII (see `crate::monitor`): borrowed as is.
                Delivery::Monitor => w.simple(&String::from_utf8_lossy(&message.payload)),
                delivery => {
                    match delivery {
                        Delivery::Pattern(pattern) => {
                            w.push(4);
                            w.bulk(b"pmessage");
                            w.bulk(pattern);
                        }
                        Delivery::Shard => {
                            w.push(3);
                            w.bulk(b"smessage");
                        }
                        _ => {
                            w.push(3);
                            w.bulk(b"message");
                        }
                    }
                    w.bulk(&message.channel);
                    w.bulk(&message.payload);
                }
            }
            next = match self.write_buf.len() < FLUSH_THRESHOLD {
                true => self
                    .client
                    .subscriptions
                    .inbox
                    .as_mut()
                    .and_then(|i| i.try_next()),
                false => None,
            };
        }
        self.flush().await
    }

    /// How much capacity an empty buffer may keep for the next requests.
    fn keep_capacity(&self) -> usize {
        match self.server.client_budget.under_pressure() {
            true => KEEP_CAPACITY_UNDER_PRESSURE,
            false => KEEP_CAPACITY,
        }
    }

    /// Brings this connection's charge to the client budget up to date
    /// with its buffers.
    fn recharge(&mut self) {
        let progress = &self.progress;
        let now = progress.read_allocation
            + progress.decoder.held_bytes()
            + self.write_buf.capacity()
            + self.client.tx.queued_bytes
            + self.blocked_bytes
            + CONNECTION_OVERHEAD_BYTES;
        self.server.client_budget.recharge(self.charged, now);
        self.charged = now;
    }

    /// Redis's `client-output-buffer-limit` for normal clients: the reply
    /// backlog may not pass the hard limit, nor stay over the soft limit
    /// for longer than allowed.
    fn check_output_limits(&mut self) -> std::io::Result<()> {
        let hot = &self.server.hot;
        let pending = self.write_buf.len() as u64;
        let hard = hot.output_hard_limit.load(Ordering::Relaxed);
        let soft = hot.output_soft_limit.load(Ordering::Relaxed);
        let over_hard = hard > 0 && pending > hard;
        let over_soft = soft > 0 && pending > soft;
        let soft_seconds = hot.output_soft_seconds.load(Ordering::Relaxed);
        let over_soft_too_long = match over_soft {
            true => {
                let since = self.over_soft_limit_since.get_or_insert_with(Instant::now);
                since.elapsed().as_secs() >= soft_seconds
            }
            false => {
                self.over_soft_limit_since = None;
                false
            }
        };
        if over_hard || over_soft_too_long {
            let handle = &self.client.handle;
            warning!(
                "Client id={} addr={} closed for overcoming of output buffer limits.",
                handle.id,
                handle.addr
            );
            self.server.stats.count_output_limit_disconnection();
            return Err(std::io::Error::other("output buffer limit reached"));
        }
        Ok(())
    }

    /// Executes every complete request in the read buffer.
    async fn execute_buffered(
        &mut self,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<Batch> {
        let max_bulk_len = self.server.hot.proto_max_bulk_len.load(Ordering::Relaxed) as usize;
        // The clocks as the batch's commands read them (see `crate::clock`):
        // read for the first command, and again after anything that waits.
        let mut now = None;
        loop {
            let limits = Limits {
                max_bulk_len,
                authenticated: !self.client.acl.needs_auth(),
            };
            let progress = &mut self.progress;
            let decoded = match progress.unexecuted.take() {
                Some(args) => Ok(Some(args)),
                None => progress.decoder.next(&mut progress.read_buf, &limits),
            };
            let mut args = match decoded {
                Ok(Some(args)) => args,
                Ok(None) => return Ok(Batch::Done),
                Err(e) => {
                    Writer::new(&mut self.write_buf, self.client.protocol)
                        .error(&format!("ERR {e}"));
                    verbose!(
                        "Protocol error ({e}) from client id={}, closing",
                        self.client.handle.id
                    );
                    return Ok(Batch::Close);
                }
            };
            // A lone request (any request at P=1) has nothing to load
            // ahead: its own lookup misses whatever is done first.
            if matches!(self.place, Place::Worker(_)) && !self.progress.read_buf.is_empty() {
                self.load_ahead(&limits);
            }
            let at = now
                .get_or_insert_with(|| Now::read(&self.server.store))
                .unix_ms();
            let held = cmd::held_by_pause(self.server, self.client, &args, at);
            let at_acceptor = matches!(self.place, Place::Acceptor);
            if at_acceptor && (held.is_some() || !cmd::is_quick(&self.server.commands, &args)) {
                self.progress.unexecuted = Some(args);
                return Ok(Batch::Done);
            }
            if let Some(writes) = held {
                // Replies before the held command go out now; a client that
                // leaves meanwhile is let go at once.
                self.flush().await?;
                tokio::select! {
                    _ = self.server.pause.wait(writes, unix_ms) => {}
                    _ = &mut killed => return Ok(Batch::Close),
                    _ = peer_closed(self.socket.socket()) => return Ok(Batch::Close),
                }
                now = None;
            }
            if let Some(lane) = self.heavy_lane().filter(|_| self.lane_turn.is_none()) {
                self.lane_turn = Some(lane.take_turn(&self.server.stats).await);
                now = None;
            }
            if !self.execute_isolated(
                &args,
                now.get_or_insert_with(|| Now::read(&self.server.store)),
            ) {
                return Ok(Batch::Close);
            }
            // Looked at before it is taken: taking it moves the whole enum,
            // a call to memcpy on every command.
            let after_reply = match self.client.after_reply.is_some() {
                true => self.client.after_reply.take(),
                false => None,
            };
            if after_reply.is_some() {
                now = None;
            }
            match after_reply {
                Some(AfterReply::Close) => return Ok(Batch::Close),
                // The reply waits with the connection, as Redis's does.
                Some(AfterReply::Sleep(pause)) => {
                    self.leave_lane();
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = &mut killed => return Ok(Batch::Close),
                    }
                }
                Some(AfterReply::Block(blocked)) => {
                    // Replies before the blocking command go out now.
                    self.flush().await?;
                    if !self.wait_blocked(blocked, killed.as_mut()).await? {
                        return Ok(Batch::Close);
                    }
                }
                Some(AfterReply::Script(job)) => {
                    self.leave_lane();
                    self.flush().await?;
                    if !self.wait_script(job, killed.as_mut()).await {
                        return Ok(Batch::Close);
                    }
                }
                Some(AfterReply::WaitReplicas(wait)) => {
                    self.leave_lane();
                    self.flush().await?;
                    let Some(count) = self.wait_replicas(wait, killed.as_mut()).await else {
                        return Ok(Batch::Close);
                    };
                    Writer::new(&mut self.write_buf, self.client.protocol).integer(count as i64);
                }
                Some(AfterReply::Sync(start)) => {
                    self.leave_lane();
                    self.flush().await?;
                    self.serve_replica(start, killed.as_mut()).await?;
                    return Ok(Batch::Close);
                }
                Some(AfterReply::WaitForScript) => {
                    self.leave_lane();
                    self.flush().await?;
                    self.progress.unexecuted = Some(std::mem::take(&mut args));
                    tokio::select! {
                        _ = self.server.scripting.gate.wait(unix_ms) => {}
                        _ = &mut killed => return Ok(Batch::Close),
                    }
                }
                None => {}
            }
            if self.write_buf.len() > FLUSH_THRESHOLD {
                self.flush().await?;
                now = None;
            }
            self.progress.decoder.recycle(args);
        }
    }

    /// Takes the whole requests in the read buffer that follow the one
    /// about to run (see `RequestDecoder::take_ahead`), unless those taken
    /// earlier are still to run, and loads their keys ahead: their
    /// lookups' cache misses, and that request's own, then overlap instead
    /// of following one another, request after request (see
    /// `keel_store::Store::prefetch`; a SET of random keys spent 16-20% of
    /// its time on three misses in a row). When they all name one key, it
    /// loads ahead the members they name in that key's collection instead
    /// (see `keel_store::Store::prefetch_members`: an HSET of random fields
    /// of one 100,000-field hash spent 17% of its time finding the field).
    fn load_ahead(&mut self, limits: &Limits) {
        let progress = &mut self.progress;
        if progress.decoder.take_ahead(&mut progress.read_buf, limits) == 0 {
            return;
        }
        let table = &self.server.commands;
        let mut keys: [&[u8]; MAX_AHEAD] = [&[]; MAX_AHEAD];
        let mut members: [&[u8]; MAX_AHEAD] = [&[]; MAX_AHEAD];
        let (mut found, mut found_members) = (0, 0);
        for request in progress.decoder.ahead() {
            let (key, member) = cmd::lookups_ahead(table, request);
            // A pipeline on one key (LPUSH, HSET of a big hash) needs one.
            if let Some(key) = key.filter(|&key| found == 0 || keys[found - 1] != key) {
                keys[found] = key;
                found += 1;
            }
            if let Some(member) = member {
                members[found_members] = member;
                found_members += 1;
            }
        }
        let store = &self.server.store;
        if found == 1 && found_members > 1 {
            store.prefetch_members(
                self.client.db,
                keys[0],
                members[..found_members].iter().copied(),
            );
        } else if found > 0 {
            store.prefetch(self.client.db, keys[..found].iter().copied());
        }
    }

    /// Runs one command; false if it panicked. A panic costs this client
    /// its connection and nothing more: the partial reply is dropped (the
    /// replies before it are still sent), the shard locks it held were
    /// released as it unwound, and the connection then closes through the
    /// same clean-up as any other (CLIENT LIST, watches, subscriptions,
    /// client budget), while the worker goes on serving its other
    /// connections.
    fn execute_isolated(&mut self, args: &[Bytes], now: &mut Now) -> bool {
        let reply_start = self.write_buf.len();
        let (server, client, out) = (self.server, &mut *self.client, &mut self.write_buf);
        let run = std::panic::AssertUnwindSafe(|| cmd::execute(server, client, args, out, now));
        if let Ok(grew) = std::panic::catch_unwind(run) {
            if grew {
                // The reply is charged with this connection's buffers from
                // now on, in place of the room it was granted.
                self.recharge();
            }
            return true;
        }
        self.write_buf.truncate(reply_start);
        let handle = &self.client.handle;
        warning!(
            "Closing client id={} addr={}: a panic in command '{}'",
            handle.id,
            handle.addr,
            String::from_utf8_lossy(&args[0][..args[0].len().min(128)]),
        );
        false
    }

    /// Runs a scripting command's job on the script thread and appends its
    /// reply; false if the client was killed meanwhile. If another script
    /// runs past `busy-reply-threshold` before the job starts, the job is
    /// given up and the reply is BUSY, as the command would have got had
    /// it arrived a moment later.
    async fn wait_script(
        &mut self,
        job: crate::scripting::Job,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> bool {
        let silent = job.silent;
        let Some(mut waiting) = crate::scripting::submit(self.server, job) else {
            Writer::new(&mut self.write_buf, self.client.protocol)
                .error("ERR scripting is not running on this server");
            return true;
        };
        loop {
            tokio::select! {
                biased;
                reply = waiting.reply() => {
                    if let Some(reply) = reply.filter(|_| !silent) {
                        self.write_buf.extend_from_slice(&reply);
                        self.recharge();
                    }
                    return true;
                }
                _ = &mut killed => return false,
                _ = tokio::time::sleep(SCRIPT_BUSY_POLL) => {
                    let running = self.server.scripting.gate.running(unix_ms());
                    if let Some(running) = running.filter(|r| r.past_threshold && waiting.cancel()) {
                        Writer::new(&mut self.write_buf, self.client.protocol)
                            .error(running.kind.busy_reply());
                        return true;
                    }
                }
            }
        }
    }

    /// Waits until the blocked command is served, times out, or the client
    /// is killed or disconnects (false: close). Data arriving meanwhile is
    /// kept for after the reply, as Redis does, as far as the read buffer
    /// has room: it does not grow here, outside the client budget, and the
    /// rest waits in the socket (and a disconnect behind it is seen once
    /// the wait ends).
    async fn wait_blocked(
        &mut self,
        blocked: Blocked,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<bool> {
        self.blocked_bytes = blocked.execution.as_ref().map_or(0, |e| e.held_bytes());
        self.recharge();
        let served = self.wait_blocked_charged(blocked, killed.as_mut()).await;
        self.blocked_bytes = 0;
        self.recharge();
        served
    }

    /// [`Connection::wait_blocked`], with the blocked command's arguments
    /// charged.
    async fn wait_blocked_charged(
        &mut self,
        mut blocked: Blocked,
        mut killed: Pin<&mut impl Future<Output = ()>>,
    ) -> std::io::Result<bool> {
        let blocking = &self.server.blocking;
        let deadline = blocked.deadline;
        let timeout = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(timeout);
        let handle = self.client.handle.clone();
        let unblocked = handle.unblocked();
        tokio::pin!(unblocked);
        let mut unblocked_with_error = false;
        // `None`: timed out; `Some(None)`: leaving; `Some(Some(_))`: served.
        let ended = loop {
            let read_buf = &mut self.progress.read_buf;
            let has_room = read_buf.capacity() > read_buf.len();
            tokio::select! {
                biased;
                outcome = blocked.served() => break Some(Some(outcome)),
                _ = &mut killed => break Some(None),
                _ = &mut timeout => break None,
                how = &mut unblocked => {
                    unblocked_with_error = how == Unblock::Error;
                    break None;
                }
                read = self.socket.read_some(read_buf), if has_room => {
                    if !matches!(read, Ok(n) if n > 0) {
                        break Some(None);
                    }
                }
            }
        };
        self.client.handle.set_blocked(false);
        let outcome = match ended {
            Some(Some(outcome)) => Some(outcome),
            Some(None) => {
                blocking.leave(&mut blocked);
                return Ok(false);
            }
            None => blocking.leave(&mut blocked),
        };
        let served = outcome.is_some();
        let serving = std::time::Instant::now();
        let mut w = Writer::new(&mut self.write_buf, self.client.protocol);
        match unblocked_with_error && !served {
            true => w.error("UNBLOCKED client unblocked via CLIENT UNBLOCK"),
            false => blocked.write_reply(&mut w, outcome),
        }
        if let Some(execution) = blocked.execution.take().filter(|_| served) {
            execution.record(self.server, &self.client.handle, serving.elapsed());
        }
        Ok(true)
    }

    /// Gives back this connection's lane turn, if it holds one, before it
    /// waits for anything but the lane: a client that does not read its
    /// replies, or a command that waits, must not keep heavy batches of
    /// other connections from running.
    fn leave_lane(&mut self) {
        self.lane_turn = None;
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        self.leave_lane();
        if self.write_buf.is_empty() {
            return Ok(());
        }
        self.check_output_limits()?;
        self.recharge();
        let handle = &self.client.handle;
        handle
            .output_buffer
            .store(self.write_buf.len(), Ordering::Relaxed);
        let written = self.socket.write_now(&self.write_buf)?;
        if written < self.write_buf.len() {
            // A client that does not read keeps this write waiting; killing
            // it (CLIENT KILL, a publisher over its limit, shutdown) ends
            // the wait.
            tokio::select! {
                biased;
                done = self.socket.write_all(&self.write_buf[written..]) => done?,
                _ = handle.killed() => {
                    return Err(std::io::Error::other("killed while its replies waited"));
                }
            }
        }
        self.server.stats.count_output(self.write_buf.len());
        self.progress.written_since_read += self.write_buf.len();
        if self.write_buf.capacity() > self.keep_capacity() {
            self.write_buf = BytesMut::new();
        } else {
            self.write_buf.clear();
        }
        handle.output_buffer.store(0, Ordering::Relaxed);
        handle
            .query_buffer
            .store(self.progress.read_buf.len(), Ordering::Relaxed);
        self.recharge();
        Ok(())
    }
}

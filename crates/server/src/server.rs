//! The server: shared state, listeners and the threading model.
//!
//! Threading model: thread per core. keel starts `threads` worker threads
//! (default: one per core), each running its own single-threaded event
//! loop. The main thread accepts connections, serves each one's first
//! quick requests (so a new client is answered without waiting for a busy
//! worker; see `connection.rs`) and hands it to the next worker in turn; a
//! connection then lives on that worker for good, so connections are
//! spread over all cores and no worker ever has to wake another to share
//! work. A worker runs each command to completion: it
//! parses the request, locks only the keyspace shards the command touches
//! (see `keel_store::keyspace`), writes the reply into the connection's
//! buffer, and sends each batch of replies with one write. There is no
//! global lock on the command path: commands on different keys proceed in
//! parallel, commands on the same shard take turns on that shard's lock,
//! and multi-key commands lock their shards in a fixed order. On each
//! worker, connections moving a lot of data take turns in a heavy lane, so
//! new and light connections are not served after all of them (see
//! `connection.rs`).
//!
//! Background maintenance (active expiry, eviction ahead of need, the
//! throughput sampler) runs on a thread of its own at a lower scheduling
//! priority than the workers: a worker woken by a request preempts it, so
//! requests do not queue behind maintenance, while maintenance still gets
//! the CPU the workers leave idle. For the short stretches in which it
//! holds shard or allocator locks it works at the workers' priority, so a
//! worker never waits on a lock held by a preempted low-priority thread
//! (see `priority.rs`). The main thread accepts connections, ahead of the
//! workers, and handles signals. Snapshots are written on a thread of their
//! own, the file is loaded at start-up on another (see `persistence`).

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU16, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use keel_store::Store;
use parking_lot::RwLock;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::client::Clients;
use crate::cmd::Table;
use crate::config::Config;
use crate::replication::journal::Journal;
use crate::stats::Stats;
use crate::{connection, notice, warning};

/// Unix time in milliseconds.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// State shared by every connection.
pub struct Server {
    /// The keyspace.
    pub store: Store,
    /// Current configuration (CONFIG GET/SET).
    pub config: RwLock<Config>,
    /// Statistics (INFO).
    pub stats: Stats,
    /// Connected clients.
    pub clients: Clients,
    /// The command table.
    pub commands: Table,
    /// ACL users, the ACL log and denial counts.
    pub acl: crate::acl::Acl,
    /// TLS settings for connections on `tls-port`.
    pub tls: crate::tls::Tls,
    /// Unix ms at start.
    pub started_ms: u64,
    /// A random id for this run, as Redis's run_id.
    pub run_id: String,
    /// The TCP port actually listened on.
    pub port: AtomicU16,
    /// The sockets listened on, each with the `bind` address and port it
    /// was bound for (a duplicate of the descriptor the acceptor uses), and
    /// where CONFIG SET `port` or `bind` sends the ones that replace them
    /// (to the main thread's loop, see [`run`]).
    listeners: parking_lot::Mutex<Listening>,
    /// Settings read on every request, as atomics so the connection path
    /// takes no lock to read them.
    pub hot: HotConfig,
    /// Wakes background eviction when a write finds memory past the high
    /// watermark.
    pub eviction_wake: tokio::sync::Notify,
    /// Asks every worker to return what its allocator thread cache holds
    /// (see `crate::defrag`): a count that goes up at each request.
    pub thread_cache_flush: tokio::sync::watch::Sender<u64>,
    /// Bytes the writes running now may add to the dataset (see
    /// [`crate::eviction::Room`]).
    pub reserved_for_writes: AtomicUsize,
    /// Threads that may run a write at the same time: the workers, and the
    /// script, replica-link and loading threads.
    pub concurrent_writers: usize,
    /// The budget of all connections' buffers (`maxmemory-clients`).
    pub client_budget: Arc<crate::client_budget::ClientBudget>,
    /// Channel and pattern subscriptions; keyspace notifications.
    pub pubsub: Arc<crate::pubsub::PubSub>,
    /// Clients blocked on lists (BLPOP and friends).
    pub blocking: crate::blocking::Blocking,
    /// The slow log (SLOWLOG).
    pub slowlog: crate::slowlog::SlowLog,
    /// CLIENT PAUSE.
    pub pause: crate::pause::Pause,
    /// EVAL scripts and functions, and the gate of the running one.
    pub scripting: crate::scripting::Scripting,
    /// RDB snapshots: saving, the schedule, loading.
    pub persistence: crate::persistence::Persistence,
    /// Replication: the primary this server follows, if any.
    pub replication: crate::replication::Replication,
    /// Cluster mode's view of the cluster; `None` unless `cluster-enabled`.
    pub cluster: Option<crate::cluster::Cluster>,
    shutdown: watch::Sender<bool>,
}

/// The listening sockets, for CONFIG SET `port` and `bind`.
#[derive(Default)]
struct Listening {
    sockets: Vec<(String, u16, std::net::TcpListener)>,
    replace: Option<mpsc::UnboundedSender<Vec<std::net::TcpListener>>>,
}

/// `busy-reply-threshold`'s default, as Redis's.
const DEFAULT_BUSY_REPLY_THRESHOLD_MS: u64 = 5000;

/// Copies of the settings connections consult per read; kept in step with
/// [`Config`] by [`Server::apply_config`].
#[derive(Default)]
pub struct HotConfig {
    /// `proto-max-bulk-len`.
    pub proto_max_bulk_len: AtomicU64,
    /// `timeout` in seconds; 0 disables it.
    pub timeout_secs: AtomicU64,
    /// `expire-tick` in milliseconds.
    pub expire_tick_ms: AtomicU64,
    /// `maxmemory-high-watermark`, percent of maxmemory.
    pub eviction_high_percent: AtomicU64,
    /// `maxmemory-low-watermark`, percent of maxmemory.
    pub eviction_low_percent: AtomicU64,
    /// `maxmemory-eviction-cpu-percent`, percent of one core.
    pub eviction_cpu_percent: AtomicU64,
    /// `client-query-buffer-limit` in bytes.
    pub query_buffer_limit: AtomicU64,
    /// `client-output-buffer-limit normal` hard limit in bytes; 0 is none.
    pub output_hard_limit: AtomicU64,
    /// `client-output-buffer-limit normal` soft limit in bytes; 0 is none.
    pub output_soft_limit: AtomicU64,
    /// Seconds a reply backlog may stay over the soft limit.
    pub output_soft_seconds: AtomicU64,
    /// `maxclients`.
    pub maxclients: AtomicU64,
    /// `busy-reply-threshold` in ms (see `crate::scripting::gate`).
    pub busy_reply_threshold_ms: AtomicU64,
    /// `min-replicas-to-write`: while above 0, a primary refuses writes
    /// unless that many replicas acknowledged within
    /// `min_replicas_max_lag` seconds.
    pub min_replicas_to_write: AtomicU64,
    /// `min-replicas-max-lag`.
    pub min_replicas_max_lag: AtomicU64,
}

impl Server {
    /// Builds the shared state for `config`; `Err` if its ACL users
    /// (`user` lines, `aclfile`) or its TLS settings cannot be loaded.
    pub fn new(config: Config, port: u16) -> Result<Server, String> {
        let now = unix_ms();
        let databases = config.databases;
        let concurrent_writers = config.threads + 3;
        let lua_maxmemory = config.lua_maxmemory as usize;
        let commands = Table::new();
        let acl = crate::acl::Acl::new(&commands, &config)?;
        let tls =
            crate::tls::Tls::new(&config).map_err(|e| format!("Failed to configure TLS: {e}"))?;
        let run_id = (0..40)
            .map(|_| char::from_digit(rand::random::<u32>() % 16, 16).expect("digit below 16"))
            .collect();
        let cluster = crate::cluster::Cluster::open(&config, port)?;
        // A cluster node tells how many keys each slot holds, and lists
        // them, without a scan (COUNTKEYSINSLOT, GETKEYSINSLOT).
        let slot_counter = cluster.as_ref().map(|_| keel_store::SlotCounter {
            slot_of: keel_topology::key_slot,
            slots: keel_topology::SLOTS,
        });
        let client_budget = Arc::new(crate::client_budget::ClientBudget::default());
        let pubsub = Arc::new(crate::pubsub::PubSub::new(client_budget.clone()));
        let server = Server {
            store: Store::counting_slots(config.databases, slot_counter),
            stats: Stats::new(commands.specs().len()),
            config: RwLock::new(config),
            clients: Clients::default(),
            commands,
            acl,
            tls,
            started_ms: now,
            run_id,
            port: AtomicU16::new(port),
            listeners: Default::default(),
            hot: HotConfig::default(),
            eviction_wake: tokio::sync::Notify::new(),
            thread_cache_flush: tokio::sync::watch::Sender::new(0),
            reserved_for_writes: AtomicUsize::new(0),
            concurrent_writers,
            client_budget,
            pubsub,
            blocking: Default::default(),
            slowlog: Default::default(),
            pause: Default::default(),
            scripting: crate::scripting::Scripting::new(databases, lua_maxmemory),
            persistence: crate::persistence::Persistence::new(now / 1000),
            replication: crate::replication::Replication::new(crate::replication::new_replid()),
            cluster,
            shutdown: watch::channel(false).0,
        };
        let pubsub = server.pubsub.clone();
        let backlog = server.replication.backlog.clone();
        server
            .store
            .set_key_event_hook(Box::new(move |event, db, key| {
                use crate::pubsub::KeyspaceEvents;
                let (class, name) = match event {
                    keel_store::KeyEvent::Expired => (KeyspaceEvents::EXPIRED, "expired"),
                    keel_store::KeyEvent::Evicted => (KeyspaceEvents::EVICTED, "evicted"),
                    keel_store::KeyEvent::New => (KeyspaceEvents::NEW, "new"),
                };
                if event != keel_store::KeyEvent::New {
                    Journal { backlog: &backlog }.deleted(db, key);
                }
                pubsub.notify(class, name, db, key);
            }));
        let backlog = server.replication.backlog.clone();
        server
            .store
            .set_write_hook(Box::new(move || Journal { backlog: &backlog }.wrote()));
        server
            .store
            .set_free_expired_hook(Box::new(crate::lazyfree::free_expired));
        server.apply_config();
        Ok(server)
    }

    /// Pushes the settings that live outside [`Config`] (in the store and
    /// the logger) after the configuration changed.
    pub fn apply_config(&self) {
        self.apply(&self.config.read());
    }

    /// Pushes `config`'s settings that live outside [`Config`]. CONFIG SET
    /// calls this while it still holds the configuration's write lock, so
    /// two concurrent changes are applied in the order they were made.
    /// Whether writes are refused for want of replicas (see
    /// [`HotConfig::min_replicas_to_write`]).
    pub fn lacks_replicas(&self) -> bool {
        let needed = self.hot.min_replicas_to_write.load(Ordering::Relaxed);
        if needed == 0 || self.replication.is_replica() {
            return false;
        }
        let max_lag = self.hot.min_replicas_max_lag.load(Ordering::Relaxed);
        let good = self.replication.backlog.good_replicas(max_lag, unix_ms());
        (good as u64) < needed
    }

    pub fn apply(&self, config: &Config) {
        let limits = config.client_output_buffer_limit;
        let settings = [
            (&self.hot.proto_max_bulk_len, config.proto_max_bulk_len),
            (&self.hot.timeout_secs, config.timeout),
            (&self.hot.expire_tick_ms, config.expire_tick_ms),
            (
                &self.hot.eviction_high_percent,
                config.eviction_high_percent,
            ),
            (&self.hot.eviction_low_percent, config.eviction_low_percent),
            (&self.hot.eviction_cpu_percent, config.eviction_cpu_percent),
            (
                &self.hot.query_buffer_limit,
                config.client_query_buffer_limit,
            ),
            (&self.hot.output_hard_limit, limits.hard),
            (&self.hot.output_soft_limit, limits.soft),
            (&self.hot.output_soft_seconds, limits.soft_seconds),
            (&self.hot.maxclients, config.maxclients),
            (
                &self.hot.busy_reply_threshold_ms,
                config
                    .accepted
                    .get("busy-reply-threshold")
                    .and_then(|ms| ms.parse().ok())
                    .unwrap_or(DEFAULT_BUSY_REPLY_THRESHOLD_MS),
            ),
            (
                &self.hot.min_replicas_to_write,
                config
                    .accepted
                    .get("min-replicas-to-write")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
            ),
            (
                &self.hot.min_replicas_max_lag,
                config
                    .accepted
                    .get("min-replicas-max-lag")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(10),
            ),
        ];
        for (hot, value) in settings {
            hot.store(value, Ordering::Relaxed);
        }
        self.acl.apply_requirepass(&config.requirepass);
        if let Some(cluster) = &self.cluster {
            let yes = |name: &str| config.value(name) == "yes";
            (cluster.require_full_coverage)
                .store(yes("cluster-require-full-coverage"), Ordering::Relaxed);
            (cluster.allow_reads_when_down)
                .store(yes("cluster-allow-reads-when-down"), Ordering::Relaxed);
        }
        self.pubsub
            .notify
            .store(config.notify_keyspace_events, Ordering::Relaxed);
        self.store
            .set_report_new_keys(self.pubsub.notifies(crate::pubsub::KeyspaceEvents::NEW));
        self.pubsub
            .set_limits(config.client_output_buffer_limit_pubsub);
        let backlog_size = crate::config::parse_memory(&config.value("repl-backlog-size"));
        self.replication.backlog.set_limits(
            backlog_size.unwrap_or(1 << 20) as usize,
            config.client_output_buffer_limit_replica.hard as usize,
        );
        self.pubsub.set_monitor_limits(limits);
        let threshold = config.latency_monitor_threshold;
        self.stats.latency_monitor.set_threshold_ms(threshold);
        let clients = config.maxmemory_clients.bytes(config.maxmemory);
        self.client_budget.set_limit(clients as usize);
        (self.scripting).set_heap_limit(config.lua_maxmemory as usize);
        self.store.set_maxmemory(config.maxmemory);
        // A lower limit may put the dataset past the high watermark now.
        self.eviction_wake.notify_one();
        self.store.encodings.set_limits(config.encodings);
        self.store.access.set_policy(config.maxmemory_policy);
        self.store.access.set_lfu_log_factor(config.lfu_log_factor);
        self.store
            .access
            .set_lfu_decay_minutes(config.lfu_decay_time);
        self.stats.set_latency_tracking(config.latency_tracking);
        self.slowlog.configure(
            config.slowlog_log_slower_than,
            usize::try_from(config.slowlog_max_len).unwrap_or(usize::MAX),
        );
        crate::log::set_level(config.loglevel);
        crate::lazyfree::configure(&config.lazyfree);
        // Only ever fails if jemalloc was built without background threads.
        let _ = tikv_jemalloc_ctl::background_thread::write(config.jemalloc_bg_thread);
    }

    /// Starts an orderly shutdown: listeners stop, connections finish what
    /// they have read and close.
    pub fn begin_shutdown(&self) {
        // The acceptors' sockets close as they stop; these duplicates too.
        self.listeners.lock().sockets.clear();
        self.shutdown.send_replace(true);
        for client in self.clients.list() {
            client.kill();
        }
    }

    /// Listens on `bind` and `port` instead of the current addresses (CONFIG
    /// SET): binds at once, so an address that can't be bound is an error
    /// for the caller and nothing changes; the main thread then stops
    /// accepting on the old sockets and accepts on these. Connections
    /// already accepted stay.
    ///
    /// An address listened on already, on the same port, keeps its socket
    /// (a new one could not be bound beside it). As in Redis, only an
    /// address marked optional ("-::1") may fail to bind.
    pub fn listen_instead(&self, bind: &[String], port: u16, backlog: u32) -> std::io::Result<()> {
        let mut listening = self.listeners.lock();
        let mut bound = Vec::new();
        let mut last_error = None;
        for addr in bind {
            let kept = listening
                .sockets
                .iter()
                .find(|(a, p, _)| a == addr && *p == port)
                .map(|(_, _, socket)| socket.try_clone());
            match kept.unwrap_or_else(|| listen_now(listen_host(addr), port, backlog)) {
                Ok(socket) => bound.push((addr.clone(), port, socket)),
                Err(e) if addr.starts_with('-') => last_error = Some(e),
                Err(e) => return Err(e),
            }
        }
        if let (true, Some(e)) = (bound.is_empty(), last_error) {
            return Err(e);
        }
        if let Some((_, _, socket)) = bound.first() {
            self.port
                .store(socket.local_addr()?.port(), Ordering::Relaxed);
        }
        let for_acceptors = bound
            .iter()
            .map(|(_, _, socket)| socket.try_clone())
            .collect::<std::io::Result<Vec<_>>>()?;
        if let Some(sender) = &listening.replace {
            let _ = sender.send(for_acceptors);
        }
        listening.sockets = bound;
        Ok(())
    }

    /// True once shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// A receiver that changes when shutdown begins.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}

/// Binds `port` on every configured address; fails only if none can be
/// bound. Each socket comes with the address it was bound for.
async fn bind(config: &Config, port: u16) -> std::io::Result<Vec<(String, TcpListener)>> {
    let mut listeners = Vec::new();
    let mut last_error = None;
    for addr in &config.bind {
        let host = listen_host(addr);
        match listen(host, port, config.tcp_backlog).await {
            Ok(l) => listeners.push((addr.clone(), l)),
            Err(e) => {
                warning!("Could not create server TCP listening socket {addr}:{port}: {e}");
                last_error = Some(e);
            }
        }
    }
    match (listeners.is_empty(), last_error) {
        (true, Some(e)) => Err(e),
        _ => Ok(listeners),
    }
}

/// The host a `bind` address means. A leading "-" (Redis's "skip if
/// unavailable") changes nothing: keel skips any address it can't bind.
/// "*" and "::*" are every interface.
fn listen_host(addr: &str) -> &str {
    match addr.trim_start_matches('-') {
        "*" => "0.0.0.0",
        "::*" => "::",
        other => other,
    }
}

/// [`listen`], from a thread that is not the event loop's (CONFIG SET).
fn listen_now(host: &str, port: u16, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use std::net::ToSocketAddrs;
    let mut last_error = None;
    for addr in (host, port).to_socket_addrs()? {
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            None,
        )?;
        socket.set_reuse_address(true)?;
        socket.set_nonblocking(true)?;
        let backlog = i32::try_from(backlog).unwrap_or(i32::MAX);
        match socket
            .bind(&addr.into())
            .and_then(|()| socket.listen(backlog))
        {
            Ok(()) => return Ok(socket.into()),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "no address to bind")
    }))
}

/// A listening socket on `host:port` with a queue of `backlog` connections
/// waiting to be accepted.
async fn listen(host: &str, port: u16, backlog: u32) -> std::io::Result<TcpListener> {
    let mut last_error = None;
    for addr in tokio::net::lookup_host((host, port)).await? {
        let socket = match addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(addr).and_then(|()| socket.listen(backlog)) {
            Ok(listener) => return Ok(listener),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "no address to bind")
    }))
}

/// Descriptors the process's descriptor table holds from start-up on:
/// room for Redis's default `maxclients` (10,000) and then some, in 128 KB
/// of kernel memory.
const PRESIZED_DESCRIPTORS: u64 = 16_384;

/// How many descriptors the table is grown to hold at start-up:
/// [`PRESIZED_DESCRIPTORS`], or fewer if RLIMIT_NOFILE allows fewer.
fn presized_descriptor_count() -> std::io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(limit.rlim_cur.min(PRESIZED_DESCRIPTORS))
}

/// Grows the process's descriptor table at start-up to hold
/// [`presized_descriptor_count`] descriptors, using `fd` to make one high
/// descriptor and closing it again.
///
/// Linux grows the table by doubling when a new descriptor does not fit,
/// and in a multi-threaded process each growth waits for an RCU grace
/// period inside the call that needed the descriptor: accept(). On a busy
/// machine that is milliseconds each, and a burst of 5,000 connections
/// grows the table from 64 to 8,192 descriptors in seven steps, while new
/// clients (a health check's PING among them) wait unaccepted, up to
/// 61 ms (bench/results/2026-11-25-connection-burst-descriptor-table.md).
/// The table never shrinks, so growing it once before anything waits
/// removes those stalls.
fn presize_descriptor_table(fd: &impl AsRawFd) -> std::io::Result<()> {
    let highest = presized_descriptor_count()?.saturating_sub(1) as libc::c_int;
    // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor (the lowest free one
    // from `highest` on) for an open one; it is ours alone to close.
    let high = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, highest) };
    if high < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `high` was made above and is used nowhere else.
    unsafe { libc::close(high) };
    Ok(())
}

/// Tasks a worker runs between two looks for new connections and socket
/// events; tokio's default is 61. Under heavy load most of those tasks are
/// heavy batches, and a new connection waits for two such looks (to be
/// handed over, then for its first data) before it runs, so this bounds
/// that wait like the heavy lane bounds the wait to run (see
/// `connection.rs`). Looking costs one epoll_wait without a timeout.
const WORKER_EVENT_INTERVAL: u32 = 16;

/// A worker thread: its own event loop, fed connections by the acceptor.
struct Worker {
    connections: mpsc::UnboundedSender<connection::Handover>,
}

impl Worker {
    fn start(server: Arc<Server>, number: usize) -> std::io::Result<Worker> {
        let (connections, mut incoming) = mpsc::unbounded_channel::<connection::Handover>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .event_interval(WORKER_EVENT_INTERVAL)
            .build()?;
        std::thread::Builder::new()
            .name(format!("keel-worker-{number}"))
            .spawn(move || {
                let lane = Arc::new(connection::HeavyLane::default());
                let mut flushes = server.thread_cache_flush.subscribe();
                runtime.block_on(async {
                    let mut tasks = tokio::task::JoinSet::new();
                    loop {
                        let handover = tokio::select! {
                            handover = incoming.recv() => handover,
                            Ok(()) = flushes.changed() => {
                                crate::memory::flush_thread_cache();
                                continue;
                            }
                        };
                        let Some(handover) = handover else {
                            break;
                        };
                        tasks.spawn(connection::serve(server.clone(), lane.clone(), handover));
                        // Reap finished connections as we go.
                        while tasks.try_join_next().is_some() {}
                    }
                    // The acceptor is gone (shutdown): let connections finish.
                    while tasks.join_next().await.is_some() {}
                });
            })?;
        Ok(Worker { connections })
    }
}

/// Runs the server until shutdown; returns once connections have closed.
/// Call it from a single-threaded runtime on the main thread.
pub async fn run(config: Config) -> std::io::Result<()> {
    let tls_port: u16 = config.value("tls-port").parse().unwrap_or(0);
    // `port 0` with a `tls-port`: TLS only, as in Redis. (Without one,
    // port 0 asks the kernel for a free port, as tests do.)
    let bound = match tls_port != 0 && config.port == 0 {
        true => Vec::new(),
        false => bind(&config, config.port).await?,
    };
    let tls_bound = match tls_port {
        0 => Vec::new(),
        port => bind(&config, port).await?,
    };
    let metrics_listeners = match config.metrics_port {
        0 => Vec::new(),
        port => bind(&config, port)
            .await?
            .into_iter()
            .map(|(_, l)| l)
            .collect(),
    };
    let port = match bound.first() {
        Some((_, listener)) => listener.local_addr()?.port(),
        None => 0,
    };
    let first = bound.first().or(tls_bound.first()).map(|(_, l)| l);
    if let Err(e) = first.map_or(Ok(()), presize_descriptor_table) {
        warning!("Could not size the descriptor table ahead: {e}");
    }
    let threads = config.threads;
    let server = Server::new(config, port)
        .map_err(|e| std::io::Error::other(format!("Aborting startup: {e}")))?;
    let server = Arc::new(server);
    crate::lazyfree::start(server.clone())?;
    crate::scripting::start(server.clone())?;
    crate::persistence::load::load_at_startup(&server)?;
    crate::replication::replica::start(server.clone())?;
    let primary = server.config.read().replicaof();
    if primary.is_some() {
        crate::replication::follow(&server, primary);
    }
    crate::cluster::apply_view(&server);
    let workers = (0..threads)
        .map(|n| Worker::start(server.clone(), n))
        .collect::<std::io::Result<Vec<_>>>()?;
    let senders: Arc<[_]> = workers.iter().map(|w| w.connections.clone()).collect();
    notice!(
        "keel {} ready to accept connections on port {port} ({threads} threads)",
        env!("CARGO_PKG_VERSION")
    );
    if tls_port != 0 {
        notice!("Ready to accept TLS connections on port {tls_port}");
    }
    let supervised = server.config.read().supervised;
    crate::process::ready(supervised);
    let next_worker = Arc::new(AtomicUsize::new(0));
    let accept_on = |listeners: Vec<TcpListener>, tls: bool| -> Vec<_> {
        listeners
            .into_iter()
            .map(|l| {
                tokio::spawn(accept_loop(
                    server.clone(),
                    l,
                    senders.clone(),
                    next_worker.clone(),
                    tls,
                ))
            })
            .collect()
    };
    let (replace, mut replacements) = mpsc::unbounded_channel();
    {
        let configured_port = server.config.read().port;
        let mut listening = server.listeners.lock();
        for (addr, listener) in &bound {
            let socket = socket2::SockRef::from(listener).try_clone()?;
            listening
                .sockets
                .push((addr.clone(), configured_port, socket.into()));
        }
        listening.replace = Some(replace);
    }
    let mut acceptors = accept_on(bound.into_iter().map(|(_, l)| l).collect(), false);
    let tls_acceptors = accept_on(tls_bound.into_iter().map(|(_, l)| l).collect(), true);
    start_metrics(server.clone(), metrics_listeners)?;
    let real_time = server.config.read().acceptor_realtime;
    let priority = crate::priority::raise_this_thread_for_accepting(real_time);
    match (&priority.real_time, &priority.above_workers) {
        (Ok(_), Ok(())) => {}
        (Err(e), Ok(())) => notice!(
            "Accepting without real-time priority, which needs CAP_SYS_NICE or \
             RLIMIT_RTPRIO ({e}): other processes' threads may delay new clients"
        ),
        (Ok(_), Err(e)) => notice!(
            "Background work at the workers' priority: coming back up to it from \
             below needs CAP_SYS_NICE or RLIMIT_NICE ({e})"
        ),
        (Err(e), Err(_)) => notice!(
            "Accepting at the workers' priority, and background work too: raising a \
             thread's priority needs CAP_SYS_NICE, RLIMIT_RTPRIO or RLIMIT_NICE ({e})"
        ),
    }
    let may_raise_priority = priority.above_workers.is_ok();
    start_maintenance(server.clone(), may_raise_priority)?;
    crate::persistence::save::start(server.clone(), may_raise_priority)?;
    let mut shutdown = server.shutdown_signal();
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let signal = loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {
                notice!("Received SIGINT scheduling shutdown...");
                break Some("shutdown-on-sigint");
            }
            _ = sigterm.recv() => {
                notice!("Received SIGTERM scheduling shutdown...");
                break Some("shutdown-on-sigterm");
            }
            _ = shutdown.wait_for(|&s| s) => {
                notice!("User requested shutdown...");
                break None;
            }
            _ = sighup.recv() => {
                // logrotate moved the log file away: write to a new one.
                match crate::log::reopen() {
                    Ok(()) => notice!("Received SIGHUP: the log file was reopened"),
                    Err(e) => warning!("Received SIGHUP, but the log file could not be reopened: {e}"),
                }
            }
            Some(listeners) = replacements.recv() => {
                // CONFIG SET port or bind: accept on the new sockets only.
                acceptors.iter().for_each(|a| a.abort());
                let listeners = listeners
                    .into_iter()
                    .map(TcpListener::from_std)
                    .collect::<std::io::Result<Vec<_>>>()?;
                acceptors = accept_on(listeners, false);
            }
        }
    };
    crate::process::stopping(supervised);
    server.begin_shutdown();
    for acceptor in acceptors.into_iter().chain(tls_acceptors) {
        let _ = acceptor.await;
    }
    server.clients.wait_all_closed(Duration::from_secs(5)).await;
    // SHUTDOWN saved (or not) as its options said; after a signal, with
    // every client gone, the dataset is saved as `shutdown-on-sigterm` (or
    // `-sigint`) says: by default if save points are set, as Redis does.
    if let Some(directive) = signal {
        if crate::persistence::save::save_on_signal(&server, directive).is_err() {
            warning!("Error trying to save the DB, exiting anyway.");
        }
    }
    // Workers whose connections are all closed are idle; the process exit
    // ends them.
    drop(workers);
    notice!("keel is now ready to exit, bye bye...");
    Ok(())
}

/// Accepts connections on `listener`; each is welcomed (its first quick
/// requests served) on a task of its own, then handed to the next worker.
async fn accept_loop(
    server: Arc<Server>,
    listener: TcpListener,
    workers: Arc<[mpsc::UnboundedSender<connection::Handover>]>,
    next_worker: Arc<AtomicUsize>,
    tls: bool,
) {
    let mut shutdown = server.shutdown_signal();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.wait_for(|&s| s) => return,
        };
        match accepted {
            Ok((socket, addr)) => {
                server.stats.count_connection();
                let (server, workers) = (server.clone(), workers.clone());
                let next_worker = next_worker.clone();
                tokio::spawn(async move {
                    let stream = match tls {
                        false => connection::Stream::plain(socket),
                        true => {
                            let Some(settings) = server.tls.current() else {
                                return;
                            };
                            if connection::over_maxclients(&server) {
                                server.stats.count_rejected_connection();
                                crate::verbose!(
                                    "Refused TLS client addr={addr}: max number of clients reached"
                                );
                                return;
                            }
                            let _counted = server.tls.begin_handshake();
                            match crate::tls::handshake(&socket, settings).await {
                                Ok(session) => connection::Stream::tls(socket, session),
                                Err(e) => {
                                    crate::verbose!(
                                        "TLS handshake with client addr={addr} failed: {e}"
                                    );
                                    return;
                                }
                            }
                        }
                    };
                    let Some(handover) = connection::welcome(server, stream, addr).await else {
                        return;
                    };
                    let n = next_worker.fetch_add(1, Ordering::Relaxed) % workers.len();
                    // Workers stop only once every sender is gone, and this
                    // task holds one.
                    let _ = workers[n].send(handover);
                });
            }
            Err(e) => {
                // Out of descriptors and the like: keep serving the
                // connections we have, retry shortly.
                warning!("Accepting client connection: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Serves the Prometheus endpoint on `listeners`, on a thread of its own:
/// a scrape reads every shard's counters, work that must not delay the
/// acceptor nor wait behind a worker's connections.
fn start_metrics(server: Arc<Server>, listeners: Vec<TcpListener>) -> std::io::Result<()> {
    if listeners.is_empty() {
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listeners = listeners
        .into_iter()
        .map(|listener| {
            notice!(
                "Serving Prometheus metrics on {}/metrics",
                listener.local_addr()?
            );
            listener.into_std()
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    std::thread::Builder::new()
        .name("keel-metrics".into())
        .spawn(move || {
            runtime.block_on(async {
                let mut served = tokio::task::JoinSet::new();
                for listener in listeners {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => {
                            served.spawn(crate::metrics::serve(server.clone(), listener));
                        }
                        Err(e) => warning!("Serving Prometheus metrics: {e}"),
                    }
                }
                while served.join_next().await.is_some() {}
            });
        })?;
    Ok(())
}

/// Starts the maintenance thread with its own event loop, below the
/// workers' priority if `may_raise_priority` (see `priority.rs`).
fn start_maintenance(server: Arc<Server>, may_raise_priority: bool) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("keel-maintenance".into())
        .spawn(move || {
            crate::priority::lower_this_thread(may_raise_priority);
            // Tasks, not futures joined in `block_on`: a timer that wakes
            // a task queues it, where one that wakes `block_on`'s future
            // also writes the runtime's wake-up descriptor.
            runtime.block_on(async {
                let mut work = tokio::task::JoinSet::new();
                work.spawn(sample_throughput(server.clone()));
                work.spawn(expire_keys(server.clone()));
                work.spawn(crate::persistence::save::run_schedule(server.clone()));
                work.spawn(crate::replication::ping_replicas(server.clone()));
                work.spawn(crate::defrag::run(server.clone()));
                work.spawn(crate::eviction::evict_ahead(server));
                while work.join_next().await.is_some() {}
            });
        })?;
    Ok(())
}

/// Keys one shard gives up per pass: short lock holds, so a request for
/// that shard waits at most a few tens of microseconds.
const EXPIRE_BATCH_PER_SHARD: usize = 64;

/// Active expiry: every `expire-tick`, reclaims every key whose deadline
/// has passed, found through the shards' deadline index (no sampling; see
/// `keel_store::expiry`). A large batch is taken in bounded passes, each
/// timed into the `keel-expire-pass` histogram, whose sum is INFO's
/// `expire_cycle_cpu_milliseconds`. Only the work on one shard at a time
/// (its lock, the keys it gives up, freeing them) runs at the workers'
/// priority; between shards the thread is back at its low priority, so a
/// worker woken by a request takes the CPU from a long reclaim at once.
async fn expire_keys(server: Arc<Server>) {
    loop {
        let tick = server.hot.expire_tick_ms.load(Ordering::Relaxed);
        crate::clock::sleep_until_next(Duration::from_millis(tick)).await;
        // A paused server reclaims nothing (see `crate::pause`), nor does a
        // replica: its primary's DEL removes the key.
        if server.pause.in_force(unix_ms()).is_some() || server.replication.is_replica() {
            continue;
        }
        loop {
            let started = std::time::Instant::now();
            let (_, more) = server.store.reclaim_expired(
                unix_ms(),
                EXPIRE_BATCH_PER_SHARD,
                crate::priority::WorkersPriority::begin,
                crate::lazyfree::free_expired,
            );
            server
                .stats
                .record_work(crate::stats::Work::ExpirePass, started.elapsed());
            if !more {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}

async fn sample_throughput(server: Arc<Server>) {
    let mut commands_sampled = None;
    loop {
        crate::clock::sleep_until_next(Duration::from_millis(100)).await;
        let commands = server.stats.sample_ops(unix_ms());
        // Keeps used_memory_peak current between INFO calls, as far as
        // commands ran since the latest sample: an idle server's memory
        // does not grow. Reading the allocator's statistics takes its
        // locks, which workers need.
        if commands_sampled.replace(commands) != Some(commands) {
            let _priority = crate::priority::WorkersPriority::begin();
            crate::memory::sample();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of this process's descriptor table, as Linux reports it.
    fn descriptor_table_size() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("FDSize:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[test]
    fn the_descriptor_table_is_grown_ahead() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        presize_descriptor_table(&socket).unwrap();
        assert!(descriptor_table_size() >= presized_descriptor_count().unwrap());
    }
}

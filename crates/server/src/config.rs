//! Configuration: the redis.conf syntax, from a file and the command line,
//! and the table behind CONFIG GET / CONFIG SET.
//!
//! Each directive is one row of [`DIRECTIVES`]: its name, whether it can
//! change at run time, and how to read and write it. Start-up parsing and
//! CONFIG SET use the same rows, so a value accepted in keel.conf is
//! accepted by CONFIG SET with the same checks and the same messages.

use keel_store::Policy;

use crate::log::Level;

/// Everything configurable, with built-in defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// Addresses to listen on.
    pub bind: Vec<String>,
    /// TCP port.
    pub port: u16,
    /// Worker threads serving connections.
    pub threads: usize,
    /// Number of databases (SELECT 0..n-1).
    pub databases: usize,
    /// Password of the default user; empty means none.
    pub requirepass: String,
    /// Bytes of stored data allowed; 0 means no limit.
    pub maxmemory: u64,
    /// What to do at maxmemory.
    pub maxmemory_policy: Policy,
    /// LFU: accesses per counter step (logarithmic).
    pub lfu_log_factor: u32,
    /// LFU: minutes per counter decrement when idle.
    pub lfu_decay_time: u32,
    /// Close connections idle this many seconds; 0 never.
    pub timeout: u64,
    /// TCP keepalive interval in seconds; 0 off.
    pub tcp_keepalive: u64,
    /// Length of the listening sockets' queue of connections not yet
    /// accepted (the kernel caps it at `net.core.somaxconn`).
    pub tcp_backlog: u32,
    /// Minimum level logged.
    pub loglevel: Level,
    /// Log file; empty logs to stderr.
    pub logfile: String,
    /// Largest single argument a client may send.
    pub proto_max_bulk_len: u64,
    /// `notify-keyspace-events` flags (see `pubsub::KeyspaceEvents`).
    pub notify_keyspace_events: u64,
    /// Budget for all connections' buffers.
    pub maxmemory_clients: ClientMemory,
    /// Bytes each Lua state (EVAL's, FUNCTION's) may hold; 0: no limit.
    pub lua_maxmemory: u64,
    /// A connection whose unprocessed input exceeds this is closed.
    pub client_query_buffer_limit: u64,
    /// Reply limits of normal clients: hard bytes, soft bytes, seconds over
    /// soft (Redis's `client-output-buffer-limit normal`); 0 disables.
    pub client_output_buffer_limit: OutputLimit,
    /// Backlog limits of subscribers (`client-output-buffer-limit pubsub`).
    pub client_output_buffer_limit_pubsub: OutputLimit,
    /// How far the stream to a replica may fall behind
    /// (`client-output-buffer-limit replica`): the replication buffer keeps
    /// up to `hard` bytes a replica has not been sent, past the backlog.
    pub client_output_buffer_limit_replica: OutputLimit,
    /// Milliseconds between active expiry passes: the bound on how long a
    /// key outlives its deadline.
    pub expire_tick_ms: u64,
    /// Percent of maxmemory above which background eviction starts.
    pub eviction_high_percent: u64,
    /// Percent of maxmemory below which background eviction stops.
    pub eviction_low_percent: u64,
    /// Percent of one core background eviction may use while under the
    /// hard limit.
    pub eviction_cpu_percent: u64,
    /// The file the configuration was read from, if any.
    pub config_file: Option<String>,
    /// Thresholds at which collections leave their compact encodings
    /// (`hash-max-listpack-entries` and friends).
    pub encodings: keel_store::Limits,
    /// Bytes past which a sparse HyperLogLog turns dense
    /// (`hll-sparse-max-bytes`).
    pub hll_sparse_max_bytes: usize,
    /// Commands that run at least this many microseconds go to the slow
    /// log; negative disables it.
    pub slowlog_log_slower_than: i64,
    /// Entries the slow log keeps.
    pub slowlog_max_len: u64,
    /// Whether commands' durations are kept in latency histograms.
    pub latency_tracking: bool,
    /// Percentiles INFO latencystats shows.
    pub latency_tracking_info_percentiles: Vec<f64>,
    /// Events at least this many milliseconds long go to the latency
    /// monitor (LATENCY LATEST, ...); 0 disables it.
    pub latency_monitor_threshold: u64,
    /// Port of the Prometheus metrics listener; 0 means none.
    pub metrics_port: u16,
    /// Who may run DEBUG (`enable-debug-command`).
    pub enable_debug_command: DebugCommand,
    /// Connections served at once; one more is refused (`maxclients`).
    pub maxclients: u64,
    /// Whether the acceptor asks for real-time scheduling
    /// (`acceptor-realtime`; see `priority.rs`).
    pub acceptor_realtime: bool,
    /// The `lazyfree-lazy-*` and `replica-lazy-flush` directives.
    pub lazyfree: crate::lazyfree::Settings,
    /// Whether clients not on the loopback interface are refused while the
    /// default user has no password (`protected-mode`).
    pub protected_mode: bool,
    /// Whether keel detaches from the terminal at start-up (`daemonize`).
    pub daemonize: bool,
    /// Where keel writes its process id; empty for nowhere, unless
    /// daemonized (then [`DEFAULT_PIDFILE`]).
    pub pidfile: String,
    /// Which supervisor to tell that keel is ready (`supervised`).
    pub supervised: Supervised,
    /// The working directory (`dir`), as given; keel changes to it at
    /// start-up, and CONFIG GET shows the absolute path.
    pub dir: String,
    /// Who may CONFIG SET `dir` and `dbfilename`
    /// (`enable-protected-configs`; the same three choices as DEBUG).
    pub enable_protected_configs: DebugCommand,
    /// Whether jemalloc's background threads purge freed memory
    /// (`jemalloc-bg-thread`).
    pub jemalloc_bg_thread: bool,
    /// Values of the directives keel accepts without honouring them (see
    /// `redis_conf.rs`), as CONFIG GET shows them, by name.
    pub accepted: std::collections::BTreeMap<&'static str, String>,
    /// The `user` lines (the words after `user`), ACL users to create at
    /// start-up.
    pub users: Vec<Vec<String>>,
    /// Whether a `save` line was read already at start-up: as in Redis,
    /// the first replaces the default and later ones add their points.
    save_loaded: bool,
}

/// The pidfile a daemonized keel writes when `pidfile` is not set.
pub const DEFAULT_PIDFILE: &str = "/var/run/keel.pid";

/// `supervised`: the init system keel tells when it is ready, as Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervised {
    /// None.
    No,
    /// upstart: keel stops itself (SIGSTOP) once ready.
    Upstart,
    /// systemd: keel sends READY=1 to `$NOTIFY_SOCKET`.
    Systemd,
    /// systemd if `$NOTIFY_SOCKET` is set, upstart if `$UPSTART_JOB` is.
    Auto,
}

impl Supervised {
    const NAMES: [(&'static str, Supervised); 4] = [
        ("upstart", Supervised::Upstart),
        ("systemd", Supervised::Systemd),
        ("auto", Supervised::Auto),
        ("no", Supervised::No),
    ];

    fn name(self) -> &'static str {
        let (name, _) = Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .expect("listed");
        name
    }

    fn parse(text: &str) -> Result<Supervised, String> {
        Self::NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(text))
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                "argument(s) must be one of the following: upstart, systemd, auto, no".into()
            })
    }
}

/// `enable-debug-command`: who may run DEBUG, as in Redis 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugCommand {
    /// Nobody (the default).
    No,
    /// Every client.
    Yes,
    /// Clients connected over the loopback interface.
    Local,
}

impl DebugCommand {
    const NAMES: [(&'static str, DebugCommand); 3] = [
        ("no", DebugCommand::No),
        ("yes", DebugCommand::Yes),
        ("local", DebugCommand::Local),
    ];

    fn name(self) -> &'static str {
        let (name, _) = Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .expect("listed");
        name
    }

    /// Whether a client from `addr` is allowed.
    pub fn allows(self, addr: std::net::SocketAddr) -> bool {
        match self {
            DebugCommand::No => false,
            DebugCommand::Yes => true,
            DebugCommand::Local => is_local(addr),
        }
    }

    fn parse(text: &str) -> Result<DebugCommand, String> {
        Self::NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(text))
            .map(|(_, v)| *v)
            .ok_or_else(|| "argument(s) must be one of the following: no, yes, local".into())
    }
}

/// The default `maxclients`, Redis's.
pub const DEFAULT_MAXCLIENTS: u64 = 10_000;

/// The default `tcp-backlog`. Redis's is 511; keel's is the usual kernel
/// cap, so that thousands of clients connecting at once (a fleet of
/// application servers restarting) are queued, not dropped: a dropped
/// connection attempt is retried by the client's kernel only after a
/// second.
pub const DEFAULT_TCP_BACKLOG: u32 = 4096;

/// The default `maxmemory-clients`: finite whatever `maxmemory` is (a
/// share of an unlimited `maxmemory` would be unlimited too), and enough
/// for thousands of connections pipelining requests with values of tens
/// of KB: the eviction-storm scenario (2,000 connections, up to 64
/// requests in flight each, 32 KB values) peaks at about 51 MB of
/// buffers, while a budget of 10% of its 256 MB `maxmemory` (25.6 MB)
/// held reads back from the first second and let requests queue.
pub const DEFAULT_MAXMEMORY_CLIENTS_BYTES: u64 = 64 << 20;

/// `lua-maxmemory`'s default: what each Lua state may hold. Redis sets no
/// limit, so a script that builds a huge table grows the process until
/// the kernel kills it; keel fails that script with "not enough memory".
/// 512 MB leaves room for what scripts really build (a 100 MB string made
/// with `string.rep` needs about twice that while it grows).
pub const DEFAULT_LUA_MAXMEMORY: u64 = 512 << 20;

/// `maxmemory-clients`: a size, or a share of `maxmemory` as Redis 7
/// allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMemory {
    /// A number of bytes; 0 means unlimited.
    Bytes(u64),
    /// A percentage of `maxmemory` (unlimited when maxmemory is 0).
    PercentOfMaxmemory(u64),
}

impl ClientMemory {
    /// The budget in bytes for `maxmemory`; 0 means unlimited.
    pub fn bytes(self, maxmemory: u64) -> u64 {
        match self {
            ClientMemory::Bytes(n) => n,
            ClientMemory::PercentOfMaxmemory(p) => maxmemory / 100 * p,
        }
    }
}

/// Output buffer limits of one client class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputLimit {
    /// Close at once above this many pending reply bytes; 0 disables.
    pub hard: u64,
    /// Close when above this many bytes for `soft_seconds`; 0 disables.
    pub soft: u64,
    /// How long a client may stay above the soft limit.
    pub soft_seconds: u64,
}

impl OutputLimit {
    /// Redis's default for the pubsub class: 32 MB hard, 8 MB for 60 s.
    pub const PUBSUB_DEFAULT: OutputLimit = OutputLimit {
        hard: 32 << 20,
        soft: 8 << 20,
        soft_seconds: 60,
    };

    /// Redis's default for the replica class: 256 MB hard, 64 MB for 60 s.
    pub const REPLICA_DEFAULT: OutputLimit = OutputLimit {
        hard: 256 << 20,
        soft: 64 << 20,
        soft_seconds: 60,
    };
}

/// Built-in maxmemory: a finite budget that suits a cache on a laptop, so an
/// unconfigured keel never grows until the machine swaps.
pub const DEFAULT_MAXMEMORY: u64 = 1 << 30;

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: vec!["127.0.0.1".into()],
            port: 6379,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            databases: 16,
            requirepass: String::new(),
            maxmemory: DEFAULT_MAXMEMORY,
            maxmemory_policy: Policy::DEFAULT,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            timeout: 0,
            tcp_keepalive: 300,
            tcp_backlog: DEFAULT_TCP_BACKLOG,
            loglevel: Level::Notice,
            logfile: String::new(),
            proto_max_bulk_len: keel_resp::DEFAULT_MAX_BULK_LEN as u64,
            expire_tick_ms: 100,
            maxmemory_clients: ClientMemory::Bytes(DEFAULT_MAXMEMORY_CLIENTS_BYTES),
            lua_maxmemory: DEFAULT_LUA_MAXMEMORY,
            notify_keyspace_events: 0,
            client_query_buffer_limit: 1 << 30,
            client_output_buffer_limit: OutputLimit::default(),
            client_output_buffer_limit_pubsub: OutputLimit::PUBSUB_DEFAULT,
            client_output_buffer_limit_replica: OutputLimit::REPLICA_DEFAULT,
            eviction_high_percent: 99,
            eviction_low_percent: 97,
            eviction_cpu_percent: 25,
            config_file: None,
            encodings: keel_store::Limits::default(),
            hll_sparse_max_bytes: 3000,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            latency_tracking: true,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            latency_monitor_threshold: 0,
            metrics_port: 0,
            enable_debug_command: DebugCommand::No,
            maxclients: DEFAULT_MAXCLIENTS,
            acceptor_realtime: false,
            lazyfree: crate::lazyfree::Settings::default(),
            protected_mode: true,
            daemonize: false,
            pidfile: String::new(),
            supervised: Supervised::No,
            dir: String::new(),
            enable_protected_configs: DebugCommand::No,
            jemalloc_bg_thread: true,
            accepted: Default::default(),
            users: Vec::new(),
            save_loaded: false,
        }
    }
}

type Getter = fn(&Config) -> String;
type Setter = fn(&mut Config, &[String]) -> Result<(), String>;

/// One configuration directive.
pub struct Directive {
    /// The name in keel.conf and CONFIG.
    pub name: &'static str,
    /// False for directives that only take effect at start-up.
    pub mutable: bool,
    /// The current value as CONFIG GET shows it.
    pub get: Getter,
    /// Parses and stores a value (the words after the name).
    pub set: Setter,
}

/// A mutable size threshold of a compact encoding, as Redis's
/// `hash-max-listpack-entries` and friends (0 up to `LONG_MAX`).
macro_rules! encoding_threshold {
    ($name:literal, $field:ident) => {
        Directive {
            name: $name,
            mutable: true,
            get: |c| c.encodings.$field.to_string(),
            set: |c, v| {
                c.encodings.$field = memory(one(v)?)?.min(i64::MAX as u64) as usize;
                Ok(())
            },
        }
    };
}

/// Every directive keel knows.
pub static DIRECTIVES: &[Directive] = &[
    Directive {
        name: "bind",
        mutable: true,
        get: |c| c.bind.join(" "),
        set: |c, v| {
            // Redis's "-addr" means "skip if unavailable"; keel binds what it
            // can and fails only if nothing binds, so the prefix is kept (as
            // CONFIG GET shows it) and ignored when binding.
            c.bind = v
                .iter()
                .flat_map(|w| w.split_whitespace())
                .map(String::from)
                .collect();
            if c.bind.is_empty() {
                return Err("wrong number of arguments".into());
            }
            Ok(())
        },
    },
    Directive {
        name: "port",
        mutable: true,
        get: |c| c.port.to_string(),
        set: |c, v| {
            c.port = int_in(one(v)?, 0, 65535)? as u16;
            Ok(())
        },
    },
    Directive {
        name: "tcp-backlog",
        mutable: false,
        get: |c| c.tcp_backlog.to_string(),
        set: |c, v| {
            c.tcp_backlog = int_in(one(v)?, 1, i32::MAX as i64)? as u32;
            Ok(())
        },
    },
    Directive {
        name: "threads",
        mutable: false,
        get: |c| c.threads.to_string(),
        set: |c, v| {
            c.threads = int_in(one(v)?, 1, 1024)? as usize;
            Ok(())
        },
    },
    Directive {
        name: "databases",
        mutable: false,
        get: |c| c.databases.to_string(),
        set: |c, v| {
            c.databases = int_in(one(v)?, 1, i32::MAX as i64)? as usize;
            Ok(())
        },
    },
    Directive {
        name: "requirepass",
        mutable: true,
        get: |c| c.requirepass.clone(),
        set: |c, v| {
            c.requirepass = one(v)?.to_string();
            Ok(())
        },
    },
    Directive {
        name: "maxmemory",
        mutable: true,
        get: |c| c.maxmemory.to_string(),
        set: |c, v| {
            c.maxmemory = memory(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "maxmemory-policy",
        mutable: true,
        get: |c| c.maxmemory_policy.name().to_string(),
        set: |c, v| {
            c.maxmemory_policy = Policy::parse(one(v)?).ok_or(
                "argument(s) must be one of the following: volatile-lru, volatile-lfu, \
                 volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction, \
                 allkeys-s3fifo",
            )?;
            Ok(())
        },
    },
    Directive {
        name: "lfu-log-factor",
        mutable: true,
        get: |c| c.lfu_log_factor.to_string(),
        set: |c, v| {
            c.lfu_log_factor = int_in(one(v)?, 0, i32::MAX as i64)? as u32;
            Ok(())
        },
    },
    Directive {
        name: "lfu-decay-time",
        mutable: true,
        get: |c| c.lfu_decay_time.to_string(),
        set: |c, v| {
            c.lfu_decay_time = int_in(one(v)?, 0, i32::MAX as i64)? as u32;
            Ok(())
        },
    },
    Directive {
        name: "timeout",
        mutable: true,
        get: |c| c.timeout.to_string(),
        set: |c, v| {
            c.timeout = int_in(one(v)?, 0, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Directive {
        name: "tcp-keepalive",
        mutable: true,
        get: |c| c.tcp_keepalive.to_string(),
        set: |c, v| {
            c.tcp_keepalive = int_in(one(v)?, 0, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Directive {
        name: "loglevel",
        mutable: true,
        get: |c| c.loglevel.name().to_string(),
        set: |c, v| {
            c.loglevel = Level::parse(one(v)?).ok_or_else(|| {
                format!(
                    "argument(s) must be one of the following: {}",
                    Level::NAMES.join(", ")
                )
            })?;
            Ok(())
        },
    },
    Directive {
        name: "logfile",
        mutable: false,
        get: |c| c.logfile.clone(),
        set: |c, v| {
            c.logfile = one(v)?.to_string();
            Ok(())
        },
    },
    Directive {
        name: "expire-tick",
        mutable: true,
        get: |c| c.expire_tick_ms.to_string(),
        set: |c, v| {
            c.expire_tick_ms = int_in(one(v)?, 1, 10_000)? as u64;
            Ok(())
        },
    },
    Directive {
        name: "maxmemory-high-watermark",
        mutable: true,
        get: |c| c.eviction_high_percent.to_string(),
        set: |c, v| {
            let high = int_in(one(v)?, 1, 100)? as u64;
            if high < c.eviction_low_percent {
                return Err("argument must not be below maxmemory-low-watermark".into());
            }
            c.eviction_high_percent = high;
            Ok(())
        },
    },
    Directive {
        name: "maxmemory-low-watermark",
        mutable: true,
        get: |c| c.eviction_low_percent.to_string(),
        set: |c, v| {
            let low = int_in(one(v)?, 1, 100)? as u64;
            if low > c.eviction_high_percent {
                return Err("argument must not be above maxmemory-high-watermark".into());
            }
            c.eviction_low_percent = low;
            Ok(())
        },
    },
    Directive {
        name: "maxmemory-eviction-cpu-percent",
        mutable: true,
        get: |c| c.eviction_cpu_percent.to_string(),
        set: |c, v| {
            c.eviction_cpu_percent = int_in(one(v)?, 1, 100)? as u64;
            Ok(())
        },
    },
    Directive {
        name: "maxmemory-clients",
        mutable: true,
        get: |c| match c.maxmemory_clients {
            ClientMemory::Bytes(n) => n.to_string(),
            ClientMemory::PercentOfMaxmemory(p) => format!("{p}%"),
        },
        set: |c, v| {
            let text = one(v)?;
            let invalid = || "argument must be a memory or percent value".to_string();
            c.maxmemory_clients = match text.strip_suffix('%') {
                Some(p) => match p.parse::<u64>().map_err(|_| invalid())? {
                    0 => ClientMemory::Bytes(0),
                    p if p > 100 => {
                        return Err("percentage argument must be less or equal to 100".into())
                    }
                    p => ClientMemory::PercentOfMaxmemory(p),
                },
                None => ClientMemory::Bytes(parse_memory(text).ok_or_else(invalid)?),
            };
            Ok(())
        },
    },
    Directive {
        name: "lua-maxmemory",
        mutable: true,
        get: |c| c.lua_maxmemory.to_string(),
        set: |c, v| {
            c.lua_maxmemory = memory(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "client-query-buffer-limit",
        mutable: true,
        get: |c| c.client_query_buffer_limit.to_string(),
        set: |c, v| {
            let n = memory(one(v)?)?;
            if n < 1024 * 1024 {
                return Err(
                    "argument must be between 1048576 and 9223372036854775807 inclusive".into(),
                );
            }
            c.client_query_buffer_limit = n;
            Ok(())
        },
    },
    Directive {
        name: "client-output-buffer-limit",
        mutable: true,
        get: |c| {
            let (l, r, p) = (
                c.client_output_buffer_limit,
                c.client_output_buffer_limit_replica,
                c.client_output_buffer_limit_pubsub,
            );
            format!(
                "normal {} {} {} slave {} {} {} pubsub {} {} {}",
                l.hard,
                l.soft,
                l.soft_seconds,
                r.hard,
                r.soft,
                r.soft_seconds,
                p.hard,
                p.soft,
                p.soft_seconds
            )
        },
        set: |c, v| {
            let words: Vec<&str> = v.iter().flat_map(|w| w.split_whitespace()).collect();
            if words.is_empty() || !words.len().is_multiple_of(4) {
                return Err("wrong number of arguments".into());
            }
            for class in words.chunks(4) {
                let limit = OutputLimit {
                    hard: memory(class[1])?,
                    soft: memory(class[2])?,
                    soft_seconds: int_in(class[3], 0, i32::MAX as i64)? as u64,
                };
                match class[0].to_ascii_lowercase().as_str() {
                    "normal" => c.client_output_buffer_limit = limit,
                    "pubsub" => c.client_output_buffer_limit_pubsub = limit,
                    "replica" | "slave" => c.client_output_buffer_limit_replica = limit,
                    other => {
                        return Err(format!(
                            "Invalid client class specified in buffer limit configuration: {other}"
                        ))
                    }
                }
            }
            Ok(())
        },
    },
    Directive {
        name: "notify-keyspace-events",
        mutable: true,
        get: |c| crate::pubsub::KeyspaceEvents::format(c.notify_keyspace_events),
        set: |c, v| {
            c.notify_keyspace_events = crate::pubsub::KeyspaceEvents::parse(one(v)?)
                .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
            Ok(())
        },
    },
    Directive {
        name: "proto-max-bulk-len",
        mutable: true,
        get: |c| c.proto_max_bulk_len.to_string(),
        set: |c, v| {
            let n = memory(one(v)?)?;
            if n < 1024 * 1024 || n > i64::MAX as u64 {
                return Err(
                    "argument must be between 1048576 and 9223372036854775807 inclusive".into(),
                );
            }
            c.proto_max_bulk_len = n;
            Ok(())
        },
    },
    encoding_threshold!("hash-max-listpack-entries", hash_max_listpack_entries),
    encoding_threshold!("hash-max-listpack-value", hash_max_listpack_value),
    encoding_threshold!("set-max-intset-entries", set_max_intset_entries),
    encoding_threshold!("set-max-listpack-entries", set_max_listpack_entries),
    encoding_threshold!("set-max-listpack-value", set_max_listpack_value),
    encoding_threshold!("zset-max-listpack-entries", zset_max_listpack_entries),
    encoding_threshold!("zset-max-listpack-value", zset_max_listpack_value),
    encoding_threshold!("stream-node-max-bytes", stream_node_max_bytes),
    encoding_threshold!("stream-node-max-entries", stream_node_max_entries),
    Directive {
        name: "hll-sparse-max-bytes",
        mutable: true,
        get: |c| c.hll_sparse_max_bytes.to_string(),
        set: |c, v| {
            c.hll_sparse_max_bytes = memory(one(v)?)?.min(i64::MAX as u64) as usize;
            Ok(())
        },
    },
    Directive {
        name: "slowlog-log-slower-than",
        mutable: true,
        get: |c| c.slowlog_log_slower_than.to_string(),
        set: |c, v| {
            c.slowlog_log_slower_than = int_in(one(v)?, -1, i64::MAX)?;
            Ok(())
        },
    },
    Directive {
        name: "slowlog-max-len",
        mutable: true,
        get: |c| c.slowlog_max_len.to_string(),
        set: |c, v| {
            c.slowlog_max_len = int_in(one(v)?, 0, i64::MAX)? as u64;
            Ok(())
        },
    },
    Directive {
        name: "latency-monitor-threshold",
        mutable: true,
        get: |c| c.latency_monitor_threshold.to_string(),
        set: |c, v| {
            c.latency_monitor_threshold = int_in(one(v)?, 0, i64::MAX)? as u64;
            Ok(())
        },
    },
    Directive {
        name: "latency-tracking",
        mutable: true,
        get: |c| yes_no(c.latency_tracking).into(),
        set: |c, v| {
            c.latency_tracking = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "latency-tracking-info-percentiles",
        mutable: true,
        get: |c| {
            let shown: Vec<String> = c
                .latency_tracking_info_percentiles
                .iter()
                .map(|&p| format_percentile(p))
                .collect();
            shown.join(" ")
        },
        set: |c, v| {
            // One word from CONFIG SET or a quoted value, several from a
            // file line: the same list either way.
            c.latency_tracking_info_percentiles = v
                .iter()
                .flat_map(|w| w.split_whitespace())
                .map(|word| match crate::cmd::parse_f64(word.as_bytes()) {
                    None => Err("Invalid latency-tracking-info-percentiles parameters"),
                    Some(p) if !(0.0..=100.0).contains(&p) => Err(
                        "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                    ),
                    Some(p) => Ok(p),
                })
                .collect::<Result<_, _>>()?;
            Ok(())
        },
    },
    Directive {
        name: "metrics-port",
        mutable: false,
        get: |c| c.metrics_port.to_string(),
        set: |c, v| {
            c.metrics_port = int_in(one(v)?, 0, 65535)? as u16;
            Ok(())
        },
    },
    Directive {
        name: "enable-debug-command",
        mutable: false,
        get: |c| c.enable_debug_command.name().to_string(),
        set: |c, v| {
            c.enable_debug_command = DebugCommand::parse(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "maxclients",
        mutable: true,
        get: |c| c.maxclients.to_string(),
        set: |c, v| {
            c.maxclients = int_in(one(v)?, 1, u32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Directive {
        name: "acceptor-realtime",
        mutable: false,
        get: |c| yes_no(c.acceptor_realtime).to_string(),
        set: |c, v| {
            c.acceptor_realtime = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "lazyfree-lazy-eviction",
        mutable: true,
        get: |c| yes_no(c.lazyfree.eviction).into(),
        set: |c, v| {
            c.lazyfree.eviction = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "lazyfree-lazy-expire",
        mutable: true,
        get: |c| yes_no(c.lazyfree.expire).into(),
        set: |c, v| {
            c.lazyfree.expire = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "lazyfree-lazy-server-del",
        mutable: true,
        get: |c| yes_no(c.lazyfree.server_del).into(),
        set: |c, v| {
            c.lazyfree.server_del = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "lazyfree-lazy-user-del",
        mutable: true,
        get: |c| yes_no(c.lazyfree.user_del).into(),
        set: |c, v| {
            c.lazyfree.user_del = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "lazyfree-lazy-user-flush",
        mutable: true,
        get: |c| yes_no(c.lazyfree.user_flush).into(),
        set: |c, v| {
            c.lazyfree.user_flush = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "replica-lazy-flush",
        mutable: true,
        get: |c| yes_no(c.lazyfree.replica_flush).into(),
        set: |c, v| {
            c.lazyfree.replica_flush = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "protected-mode",
        mutable: true,
        get: |c| yes_no(c.protected_mode).into(),
        set: |c, v| {
            c.protected_mode = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "daemonize",
        mutable: false,
        get: |c| yes_no(c.daemonize).into(),
        set: |c, v| {
            c.daemonize = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "pidfile",
        mutable: false,
        get: |c| c.pidfile.clone(),
        set: |c, v| {
            c.pidfile = one(v)?.to_string();
            Ok(())
        },
    },
    Directive {
        name: "supervised",
        mutable: false,
        get: |c| c.supervised.name().into(),
        set: |c, v| {
            c.supervised = Supervised::parse(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "dir",
        mutable: true,
        get: |c| c.dir.clone(),
        set: |c, v| {
            c.dir = one(v)?.to_string();
            Ok(())
        },
    },
    Directive {
        name: "enable-protected-configs",
        mutable: false,
        get: |c| c.enable_protected_configs.name().to_string(),
        set: |c, v| {
            c.enable_protected_configs = DebugCommand::parse(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "jemalloc-bg-thread",
        mutable: true,
        get: |c| yes_no(c.jemalloc_bg_thread).into(),
        set: |c, v| {
            c.jemalloc_bg_thread = parse_yes_no(one(v)?)?;
            Ok(())
        },
    },
    Directive {
        name: "list-max-listpack-size",
        mutable: true,
        get: |c| c.encodings.list_max_listpack_size.to_string(),
        set: |c, v| {
            c.encodings.list_max_listpack_size = int_in(one(v)?, i32::MIN as i64, i32::MAX as i64)?;
            Ok(())
        },
    },
];

/// Directives only a client allowed by `enable-protected-configs` may
/// CONFIG SET, as in Redis 7.
pub const PROTECTED: &[&str] = &["dir", "dbfilename"];

/// How deep `include` directives may nest.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Every directive: those keel honours, then those it accepts (see
/// `redis_conf.rs`).
pub fn all() -> impl Iterator<Item = &'static Directive> {
    DIRECTIVES.iter().chain(crate::redis_conf::ACCEPTED)
}

/// The directive called `name` or one of its aliases (case-insensitive),
/// hidden ones included.
pub fn directive(name: &str) -> Option<&'static Directive> {
    let name = crate::redis_conf::ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map_or(name, |&(_, target)| target);
    all()
        .chain(crate::redis_conf::HIDDEN)
        .find(|d| d.name.eq_ignore_ascii_case(name))
}

/// Every name CONFIG GET knows, with its directive and whether it is
/// hidden (shown only when asked for by that exact name): each
/// directive's own name, then each alias, then the hidden directives.
pub fn names() -> impl Iterator<Item = (&'static str, &'static Directive, bool)> {
    all()
        .map(|d| (d.name, d, false))
        .chain(
            crate::redis_conf::ALIASES
                .iter()
                .filter_map(|&(alias, _)| Some((alias, directive(alias)?, false))),
        )
        .chain(crate::redis_conf::HIDDEN.iter().map(|d| (d.name, d, true)))
}

/// Changes the working directory to `dir` (`dir` directive); returns it as
/// an absolute path, as CONFIG GET shows it.
pub fn change_dir(dir: &str) -> Result<String, String> {
    if !dir.is_empty() {
        std::env::set_current_dir(dir).map_err(|e| strerror(&e))?;
    }
    std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .map_err(|e| strerror(&e))
}

/// An I/O error as C's strerror words it ("No such file or directory"),
/// without Rust's " (os error 2)".
pub fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Whether `addr` is the loopback interface (IPv4, IPv6, or IPv4 mapped
/// into IPv6), as Redis's protected mode and `local` options mean it.
pub fn is_local(addr: std::net::SocketAddr) -> bool {
    match addr.ip() {
        std::net::IpAddr::V4(ip) => ip.is_loopback(),
        std::net::IpAddr::V6(ip) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

fn one(values: &[String]) -> Result<&str, String> {
    match values {
        [v] => Ok(v),
        _ => Err("wrong number of arguments".into()),
    }
}

fn yes_no(on: bool) -> &'static str {
    if on {
        "yes"
    } else {
        "no"
    }
}

pub(crate) fn parse_yes_no(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

/// A percentile as Redis prints it in CONFIG GET and INFO latencystats:
/// C's `%f`, without trailing zeros or a trailing point (`99.9`, `50`).
pub fn format_percentile(percentile: f64) -> String {
    let text = format!("{percentile:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(crate) fn int_in(text: &str, min: i64, max: i64) -> Result<i64, String> {
    let n: i64 = text
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    if n < min || n > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n)
}

/// Parses a memory size as Redis's `memtoull`: a number with an optional
/// unit `b`, `k`/`kb`, `m`/`mb`, `g`/`gb` (the `b` forms are powers of 1024).
pub fn parse_memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(digits_end);
    let multiplier: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
}

fn memory(text: &str) -> Result<u64, String> {
    parse_memory(text).ok_or_else(|| "argument must be a memory value".into())
}

/// A problem in the configuration, located for the operator.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Config {
    /// Builds the configuration from the command line: an optional config
    /// file path first, then `--directive value ...` pairs that override it.
    pub fn from_args(args: &[String]) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut rest = args;
        if let Some(path) = rest.first().filter(|a| !a.starts_with("--")) {
            let text = std::fs::read_to_string(path)
                .map_err(|e| ConfigError(format!("can't read config file '{path}': {e}")))?;
            config.apply_text(&text, path)?;
            // Absolute, so CONFIG REWRITE finds it after keel changes to `dir`.
            let absolute = std::path::absolute(path)
                .map_or_else(|_| path.clone(), |p| p.to_string_lossy().into_owned());
            config.config_file = Some(absolute);
            rest = &rest[1..];
        }
        let mut line: Vec<String> = Vec::new();
        let mut lines = Vec::new();
        for arg in rest {
            if let Some(name) = arg.strip_prefix("--") {
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                line.push(name.to_string());
            } else if line.is_empty() {
                return Err(ConfigError(format!(
                    "command line: '{arg}' is not a --directive and not the first argument"
                )));
            } else {
                line.push(arg.clone());
            }
        }
        if !line.is_empty() {
            lines.push(line);
        }
        for words in lines {
            config
                .apply(&words)
                .map_err(|e| ConfigError(format!("command line: '--{}': {e}", words.join(" "))))?;
        }
        Ok(config)
    }

    /// The value CONFIG GET shows for directive `name` (empty for a name
    /// that is none).
    pub fn value(&self, name: &str) -> String {
        directive(name).map_or_else(String::new, |d| (d.get)(self))
    }

    /// The primary the `replicaof` directive names, if any.
    pub fn replicaof(&self) -> Option<crate::replication::Primary> {
        let value = self.accepted.get("replicaof")?;
        let (host, port) = value.split_once(' ')?;
        Some(crate::replication::Primary {
            host: host.to_string(),
            port: port.parse().ok()?,
        })
    }

    /// Applies redis.conf-style text; errors name `source` and the line.
    pub fn apply_text(&mut self, text: &str, source: &str) -> Result<(), ConfigError> {
        self.apply_included(text, source, 0)
    }

    /// [`Config::apply_text`] for text `depth` includes deep.
    fn apply_included(
        &mut self,
        text: &str,
        source: &str,
        depth: usize,
    ) -> Result<(), ConfigError> {
        for (number, raw) in text.lines().enumerate() {
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let located =
                |msg: String| ConfigError(format!("{source}:{}: '{trimmed}': {msg}", number + 1));
            let words = keel_resp::split_words(trimmed.as_bytes())
                .ok_or_else(|| located("unbalanced quotes".into()))?;
            let words: Vec<String> = words
                .into_iter()
                .map(|w| String::from_utf8_lossy(&w).into_owned())
                .collect();
            match words.as_slice() {
                [include, pattern] if include.eq_ignore_ascii_case("include") => {
                    self.include(pattern, source, depth).map_err(located)?
                }
                _ => self.apply(&words).map_err(located)?,
            }
        }
        Ok(())
    }

    /// `include path`: applies the file, or each file matching a pattern
    /// with `*` or `?` in its last part, in name order (none matching is
    /// no error, as in Redis). A relative path is taken from the including
    /// file's folder.
    fn include(&mut self, pattern: &str, source: &str, depth: usize) -> Result<(), String> {
        // A file that includes itself, directly or not, would recurse
        // until the stack overflows (Redis's does).
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(format!(
                "includes nested more than {MAX_INCLUDE_DEPTH} deep (a loop?)"
            ));
        }
        let base = std::path::Path::new(source)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        let pattern = base.join(pattern);
        let name = pattern
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let paths = if name.contains(['*', '?']) {
            let folder = pattern.parent().unwrap_or(std::path::Path::new("."));
            let mut matches: Vec<_> = std::fs::read_dir(folder)
                .map_err(|e| format!("can't read '{}': {e}", folder.display()))?
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        keel_store::glob_match(
                            name.as_bytes(),
                            n.to_string_lossy().as_bytes(),
                            false,
                        )
                    })
                })
                .collect();
            matches.sort();
            matches
        } else {
            vec![pattern]
        };
        for path in paths {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("can't read included file '{shown}': {e}"))?;
            self.apply_included(&text, &shown, depth + 1)
                .map_err(|e| e.0)?;
        }
        Ok(())
    }

    /// Applies one directive given as words (`["maxmemory", "1gb"]`).
    fn apply(&mut self, words: &[String]) -> Result<(), String> {
        let (name, values) = words.split_first().ok_or("empty directive")?;
        if crate::redis_conf::IGNORED
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
        {
            return Ok(());
        }
        if let Some((_, why)) = crate::redis_conf::REFUSED
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            return Err(why.to_string());
        }
        if name.eq_ignore_ascii_case("user") {
            if values.is_empty() {
                return Err("wrong number of arguments".into());
            }
            self.users.push(values.to_vec());
            return Ok(());
        }
        let directive = directive(name).ok_or_else(|| format!("unknown directive '{name}'"))?;
        let adds_points = directive.name == "save" && self.save_loaded;
        let values: Vec<String> = match values {
            [] | [_] if values.concat().is_empty() => values.to_vec(),
            _ if adds_points => (directive.get)(self)
                .split_whitespace()
                .map(String::from)
                .chain(values.iter().cloned())
                .collect(),
            _ => values.to_vec(),
        };
        self.save_loaded |= directive.name == "save";
        (directive.set)(self, &values)
            .map_err(|e| format!("invalid value for '{}': {e}", directive.name))
    }
}

impl Config {
    /// CONFIG REWRITE: rewrites `path` so it holds the current values.
    /// Comments and unknown lines are kept in place; each directive keeps
    /// its first line (later duplicates are dropped); directives that differ
    /// from their default and are not in the file are appended.
    pub fn rewrite(&self, path: &str) -> std::io::Result<()> {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        let defaults = Config::default();
        let mut written = Vec::new();
        let mut out = String::new();
        for line in old.lines() {
            let trimmed = line.trim();
            let name = trimmed.split_whitespace().next().unwrap_or("");
            match directive(name).filter(|_| !trimmed.starts_with('#')) {
                Some(d) => {
                    if !written.contains(&d.name) {
                        written.push(d.name);
                        out.push_str(&self.line_for(d));
                    }
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        for d in all() {
            if !written.contains(&d.name) && (d.get)(self) != (d.get)(&defaults) {
                out.push_str(&self.line_for(d));
            }
        }
        let temp = format!("{path}.rewrite-{}", std::process::id());
        std::fs::write(&temp, out)?;
        std::fs::rename(&temp, path)
    }

    /// `name value` as keel.conf spells it, quoting values that need it.
    fn line_for(&self, d: &Directive) -> String {
        let value = (d.get)(self);
        let needs_quotes = d.name != "bind"
            && (value.is_empty()
                || value.contains(|c: char| c.is_whitespace() || c == '"' || c == '\''));
        if needs_quotes {
            format!(
                "{} \"{}\"\n",
                d.name,
                value.replace('\\', "\\\\").replace('"', "\\\"")
            )
        } else {
            format!("{} {value}\n", d.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_include_loop_is_an_error() {
        let dir = std::env::temp_dir().join(format!("keel-include-loop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("loop.conf");
        std::fs::write(&path, "include loop.conf\n").unwrap();
        let err = Config::from_args(&args(&[path.to_str().unwrap()])).unwrap_err();
        assert!(err.0.contains("nested more than 16 deep"), "{}", err.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_directive_is_declared_once() {
        let mut seen = std::collections::HashSet::new();
        for directive in all().chain(crate::redis_conf::HIDDEN) {
            assert!(
                seen.insert(directive.name),
                "{} is declared twice",
                directive.name
            );
        }
    }

    #[test]
    fn rewrite_keeps_comments_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("keel-rewrite-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keel.conf");
        let path = path.to_str().unwrap();
        std::fs::write(path, "# my cache\nport 7000\nport 7001\nmaxmemory 1mb\n").unwrap();
        let mut config = Config::from_args(&args(&[path])).unwrap();
        config.maxmemory = 2 << 20;
        config.requirepass = "se cret".into();
        config.rewrite(path).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.starts_with("# my cache\nport 7001\nmaxmemory 2097152\n"),
            "{text}"
        );
        let reread = Config::from_args(&args(&[path])).unwrap();
        assert_eq!(reread.requirepass, "se cret");
        assert_eq!(reread.maxmemory, 2 << 20);
    }

    #[test]
    fn percentiles_print_as_redis_prints_them() {
        assert_eq!(format_percentile(99.9), "99.9");
        assert_eq!(format_percentile(50.0), "50");
        assert_eq!(format_percentile(12.5), "12.5");
        assert_eq!(format_percentile(0.0), "0");
        let mut config = Config::default();
        config
            .apply(&args(&["latency-tracking-info-percentiles", "1e1", "5.0"]))
            .unwrap();
        assert_eq!(config.latency_tracking_info_percentiles, [10.0, 5.0]);
        config
            .apply(&args(&["latency-tracking-info-percentiles", ""]))
            .unwrap();
        assert!(config.latency_tracking_info_percentiles.is_empty());
        assert!(config
            .apply(&args(&["latency-tracking-info-percentiles", "101"]))
            .is_err());
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("1G"), Some(1_000_000_000));
        assert_eq!(parse_memory("100mb"), Some(100 << 20));
        assert_eq!(parse_memory("42"), Some(42));
        assert_eq!(parse_memory("-1"), None);
        assert_eq!(parse_memory("1tb"), None);
        assert_eq!(parse_memory("abc"), None);
    }

    #[test]
    fn file_then_command_line() {
        let dir = std::env::temp_dir().join(format!("keel-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keel.conf");
        std::fs::write(
            &path,
            "# comment\nport 7000\nmaxmemory 100mb\nrequirepass \"a b\"\n",
        )
        .unwrap();
        let config = Config::from_args(&args(&[
            path.to_str().unwrap(),
            "--port",
            "7001",
            "--bind",
            "127.0.0.1",
            "::1",
        ]))
        .unwrap();
        assert_eq!(config.port, 7001);
        assert_eq!(config.maxmemory, 100 << 20);
        assert_eq!(config.requirepass, "a b");
        assert_eq!(config.bind, vec!["127.0.0.1", "::1"]);
    }

    #[test]
    fn errors_name_the_file_line_and_directive() {
        let mut config = Config::default();
        let err = config
            .apply_text("port 1\nfrobnicate yes\n", "keel.conf")
            .unwrap_err();
        assert_eq!(
            err.0,
            "keel.conf:2: 'frobnicate yes': unknown directive 'frobnicate'"
        );
        let err = config
            .apply_text("maxmemory lots\n", "keel.conf")
            .unwrap_err();
        assert!(
            err.0
                .contains("invalid value for 'maxmemory': argument must be a memory value"),
            "{}",
            err.0
        );
        let err = Config::from_args(&args(&["--port", "x"])).unwrap_err();
        assert!(err.0.contains("'--port x'"), "{}", err.0);
    }
}

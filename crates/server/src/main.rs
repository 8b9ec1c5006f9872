//! keel-server: a Redis-compatible cache server that stays steady when
//! full. This binary is thin glue: parse the configuration, start logging,
//! build the runtime and run the server (see `server.rs` for the threading
//! model, `command/` for the commands).

mod acl;
mod blocking;
mod client;
mod client_budget;
mod clock;
mod cluster;
mod cmd;
mod config;
mod connection;
mod defrag;
mod eviction;
mod latency;
mod latency_monitor;
mod lazyfree;
mod log;
mod memory;
mod metrics;
mod monitor;
mod pause;
mod persistence;
mod priority;
mod process;
mod pubsub;
mod redis_conf;
mod replication;
mod scripting;
mod server;
mod slowlog;
mod stats;
mod striped;
mod tls;

use tikv_jemallocator::Jemalloc;

/// jemalloc, as Redis uses: low fragmentation for many small allocations,
/// and its statistics give INFO's used_memory and RSS figures.
#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

/// jemalloc's start-up options. `background_thread`: jemalloc's own
/// threads give freed pages back to the system (as Redis's default
/// `jemalloc-bg-thread yes`), so after a mass expiry or eviction the purge
/// never runs inline in a worker's allocation. `dirty_decay_ms:1000`
/// (jemalloc's default is 10 s): memory keel frees stays resident for about
/// a second, not ten, so RSS is back within `maxmemory` +
/// `maxmemory-clients` + the idle RSS a second or two after a request of
/// megabytes (four 10 MB LPUSHes left 29 MB resident for 5 s at the
/// default). Measured on one binary, interleaved: no CPU cost for SET/GET of
/// 64 B (1.36 against 1.44 us of keel's CPU per request) nor for 64 KB SETs
/// evicting (43 against 42 us in the quiet round), where purging every
/// free (0 ms) cost 200 us. `slab_sizes:1-4096:16`: size classes up to
/// 4 KB take their regions from slabs of 16 pages, not 1-7, so jemalloc's
/// metadata per slab (an extent header, radix-tree leaves) is shared by
/// 2-16 times more regions: 0.8 bytes less a key for 1M keys with a TTL
/// (96-byte entry blocks: 682 regions a slab, not 128). Measured through
/// churn (fill 1M keys, delete a random half, then 90% of the rest, refill
/// 1M: RSS within 0.5 MB of the default at every step, where random
/// deletions pin nearly every slab either way) and on an emptied server
/// (0.4 MB more RSS after FLUSHALL).
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 64] =
    b"background_thread:true,dirty_decay_ms:1000,slab_sizes:1-4096:16\0";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("-v" | "--version")) {
        println!("keel-server v={}", env!("CARGO_PKG_VERSION"));
        return;
    }
    if matches!(args.first().map(String::as_str), Some("-h" | "--help")) {
        println!(
            "Usage: keel-server [/path/to/keel.conf] [--directive value ...]\n\
             Directives use redis.conf names, e.g. --port 7000 --maxmemory 1gb.\n\
             See keel.conf in the source tree for every directive."
        );
        return;
    }
    let mut config = match config::Config::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("keel-server: configuration error: {e}");
            std::process::exit(1);
        }
    };
    let pidfile = match process::prepare(&mut config) {
        Ok(written) => written,
        Err(e) => {
            eprintln!("keel-server: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = log::set_file(&config.logfile) {
        eprintln!("keel-server: can't open logfile '{}': {e}", config.logfile);
        std::process::exit(1);
    }
    log::set_level(config.loglevel);
    if config.value("syslog-enabled") == "yes" {
        log::set_syslog(
            &config.value("syslog-ident"),
            &config.value("syslog-facility"),
        );
    }
    process::raise_descriptor_limit(&mut config);
    // The main thread's loop: acceptor, signals, background work. Workers
    // get loops of their own (see server.rs).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let result = match runtime {
        Ok(rt) => rt.block_on(server::run(config)),
        Err(e) => Err(e),
    };
    if let Some(path) = pidfile {
        let _ = std::fs::remove_file(path);
    }
    if let Err(e) = result {
        warning!("keel-server: {e}");
        std::process::exit(1);
    }
}

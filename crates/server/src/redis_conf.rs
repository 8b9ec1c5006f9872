//! The redis.conf directives keel accepts without a subsystem behind them
//! (yet): persistence, replication, cluster, TLS, scripting limits and
//! Redis's own tuning knobs. A Redis configuration file that sets them
//! loads unchanged, and CONFIG GET / CONFIG SET report and take them with
//! Redis 7.0's checks, messages and value format (memory sizes in bytes,
//! enums in lowercase), so tools that read or write them keep working.
//! keel.conf says what each one means for keel.
//!
//! A directive whose value asks for something keel cannot give and whose
//! absence would go unnoticed (a Unix socket, TLS, cluster mode) is refused instead, with a message saying so: a
//! server that starts without doing what its configuration says must not
//! look as if it did.
//!
//! Each value is kept as the text CONFIG GET shows, in
//! [`Config::accepted`](crate::config::Config), keyed by the directive's name.

use crate::config::{int_in, parse_memory, parse_yes_no, Directive};

/// How an accepted directive's value is checked and written back.
#[derive(Clone, Copy)]
pub enum Kind {
    /// `yes` or `no`.
    Bool,
    /// An integer within the bounds.
    Int(i64, i64),
    /// An integer within the first bounds, kept within the second ones
    /// (`hz`: any count is taken as a hint, capped to 1..=500).
    IntCapped(i64, i64, i64, i64),
    /// A memory size with optional unit within the bounds, shown in bytes.
    Memory(u64, u64),
    /// One of the names (case-insensitive), shown as listed; a name
    /// written `name=shown` is another spelling of `shown`.
    Enum(&'static [&'static str]),
    /// Any text.
    Text,
    /// `save`: pairs of seconds and changes, or empty.
    Save,
    /// `oom-score-adj-values`: three integers from -2000 to 2000.
    OomScoreAdjValues,
    /// `shutdown-on-sigint` / `shutdown-on-sigterm`: `default` or a set of
    /// `save`, `nosave`, `now`, `force`.
    ShutdownFlags,
    /// `unixsocketperm`: an octal mode.
    Octal,
    /// Accepted only with the value keel behaves as: anything else gets
    /// the message (`tls-port 0`, `cluster-enabled no`, ...).
    Only(&'static str, &'static str),
    /// `replicaof` / `slaveof`: `host port`, or `no one`.
    ReplicaOf,
    /// `dbfilename`: a file name, not a path.
    FileName,
}

const SHUTDOWN_FLAGS: [&str; 4] = ["save", "nosave", "now", "force"];

/// Checks `words` (the value, one word from CONFIG SET or several from a
/// file line) and returns the value as CONFIG GET shows it.
pub fn normalize(kind: Kind, words: &[String]) -> Result<String, String> {
    let one = || match words {
        [v] => Ok(v.as_str()),
        _ => Err("wrong number of arguments".to_string()),
    };
    match kind {
        Kind::Bool => Ok(yes_no(parse_yes_no(one()?)?)),
        Kind::Int(min, max) => Ok(int_in(one()?, min, max)?.to_string()),
        Kind::IntCapped(min, max, lowest, highest) => {
            Ok(int_in(one()?, min, max)?.clamp(lowest, highest).to_string())
        }
        Kind::Memory(min, max) => {
            let n = parse_memory(one()?).ok_or("argument must be a memory value")?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(n.to_string())
        }
        Kind::Enum(names) => {
            let text = one()?;
            let spelled = |name: &'static str| name.split_once('=').unwrap_or((name, name));
            names
                .iter()
                .map(|&n| spelled(n))
                .find(|(name, _)| name.eq_ignore_ascii_case(text))
                .map(|(_, shown)| shown.to_string())
                .ok_or_else(|| {
                    let names: Vec<&str> = names.iter().map(|&n| spelled(n).0).collect();
                    format!(
                        "argument(s) must be one of the following: {}",
                        names.join(", ")
                    )
                })
        }
        Kind::Text => Ok(one()?.to_string()),
        Kind::Save => save(words),
        Kind::OomScoreAdjValues => {
            let values: Vec<&str> = words.iter().flat_map(|w| w.split_whitespace()).collect();
            if values.len() != 3 {
                return Err("wrong number of arguments".into());
            }
            let numbers = values
                .iter()
                .map(|v| int_in(v, -2000, 2000).map(|n| n.to_string()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    "Invalid oom-score-adj-values: value must be between -2000 and 2000"
                })?;
            Ok(numbers.join(" "))
        }
        Kind::ShutdownFlags => shutdown_flags(words),
        Kind::Octal => {
            let text = one()?;
            u32::from_str_radix(text, 8)
                .ok()
                .filter(|&mode| mode <= 0o777)
                .map(|mode| format!("{mode:o}"))
                .ok_or_else(|| "argument must be an octal number".into())
        }
        Kind::Only(value, message) => {
            let text = one()?;
            if text.eq_ignore_ascii_case(value) {
                Ok(value.to_string())
            } else {
                Err(message.to_string())
            }
        }
        Kind::ReplicaOf => {
            let words: Vec<&str> = words.iter().flat_map(|w| w.split_whitespace()).collect();
            match words.as_slice() {
                [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
                    Ok(String::new())
                }
                [host, port] => match port.parse::<u16>() {
                    Ok(port) => Ok(format!("{host} {port}")),
                    Err(_) => Err("Invalid master port".into()),
                },
                _ => Err("wrong number of arguments".into()),
            }
        }
        Kind::FileName => {
            let text = one()?;
            if text.contains('/') {
                return Err("dbfilename can't be a path, just a filename".into());
            }
            Ok(text.to_string())
        }
    }
}

fn yes_no(on: bool) -> String {
    if on { "yes" } else { "no" }.to_string()
}

/// `save`: Redis's snapshot points, as pairs of seconds and changes.
fn save(words: &[String]) -> Result<String, String> {
    let values: Vec<&str> = words.iter().flat_map(|w| w.split_whitespace()).collect();
    if !values.len().is_multiple_of(2) {
        return Err("Invalid save parameters".into());
    }
    // Seconds must be at least 1, a count of changes may be 0.
    let numbers = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.parse::<i32>()
                .ok()
                .filter(|&n| n >= (i % 2 == 0) as i32)
                .map(|n| n.to_string())
                .ok_or("Invalid save parameters")
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(numbers.join(" "))
}

/// `shutdown-on-sig*`: `default`, or flags in Redis's order.
fn shutdown_flags(words: &[String]) -> Result<String, String> {
    let invalid = || {
        "argument(s) must be one of the following: default, save, nosave, now, force".to_string()
    };
    let given: Vec<String> = words
        .iter()
        .flat_map(|w| w.split_whitespace())
        .map(str::to_ascii_lowercase)
        .collect();
    if given.is_empty() {
        return Err(invalid());
    }
    if given.iter().all(|w| w == "default") {
        return Ok("default".into());
    }
    if given.iter().any(|w| !SHUTDOWN_FLAGS.contains(&w.as_str())) {
        return Err(invalid());
    }
    let shown: Vec<&str> = SHUTDOWN_FLAGS
        .iter()
        .copied()
        .filter(|f| given.iter().any(|w| w == f))
        .collect();
    Ok(shown.join(" "))
}

/// An accepted directive: `name`, whether CONFIG SET may change it, how
/// its value is checked, and its default as CONFIG GET shows it.
macro_rules! accepted {
    ($name:literal, $mutable:expr, $kind:expr, $default:literal) => {
        Directive {
            name: $name,
            mutable: $mutable,
            get: |c| {
                c.accepted
                    .get($name)
                    .cloned()
                    .unwrap_or_else(|| $default.to_string())
            },
            set: |c, v| {
                let value = normalize($kind, v)?;
                c.accepted.insert($name, value);
                Ok(())
            },
        }
    };
}

const MUTABLE: bool = true;
const IMMUTABLE: bool = false;
const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
const MEM_MAX: u64 = i64::MAX as u64;

const NO_TLS: &str = "keel has no cluster bus yet, so no TLS for it";
const NO_UNIXSOCKET: &str = "keel does not listen on a Unix socket yet: use bind and port";

/// Every accepted directive, in the order of Redis 7.0's redis.conf.
pub static ACCEPTED: &[Directive] = &[
    accepted!("unixsocket", IMMUTABLE, Kind::Only("", NO_UNIXSOCKET), ""),
    accepted!("unixsocketperm", IMMUTABLE, Kind::Octal, "0"),
    accepted!(
        "socket-mark-id",
        IMMUTABLE,
        Kind::Int(0, u32::MAX as i64),
        "0"
    ),
    accepted!("bind-source-addr", MUTABLE, Kind::Text, ""),
    accepted!("tls-port", IMMUTABLE, Kind::Int(0, 65535), "0"),
    accepted!("tls-cert-file", MUTABLE, Kind::Text, ""),
    accepted!("tls-key-file", MUTABLE, Kind::Text, ""),
    accepted!("tls-key-file-pass", MUTABLE, Kind::Text, ""),
    accepted!("tls-client-cert-file", MUTABLE, Kind::Text, ""),
    accepted!("tls-client-key-file", MUTABLE, Kind::Text, ""),
    accepted!("tls-client-key-file-pass", MUTABLE, Kind::Text, ""),
    accepted!("tls-dh-params-file", MUTABLE, Kind::Text, ""),
    accepted!("tls-ca-cert-file", MUTABLE, Kind::Text, ""),
    accepted!("tls-ca-cert-dir", MUTABLE, Kind::Text, ""),
    accepted!(
        "tls-auth-clients",
        MUTABLE,
        Kind::Enum(&["no", "yes", "optional"]),
        "yes"
    ),
    accepted!("tls-replication", MUTABLE, Kind::Bool, "no"),
    accepted!("tls-cluster", MUTABLE, Kind::Only("no", NO_TLS), "no"),
    accepted!("tls-protocols", MUTABLE, Kind::Text, ""),
    accepted!("tls-ciphers", MUTABLE, Kind::Text, ""),
    accepted!("tls-ciphersuites", MUTABLE, Kind::Text, ""),
    accepted!("tls-prefer-server-ciphers", MUTABLE, Kind::Bool, "no"),
    accepted!("tls-session-caching", MUTABLE, Kind::Bool, "yes"),
    accepted!(
        "tls-session-cache-size",
        MUTABLE,
        Kind::Int(0, INT_MAX),
        "20480"
    ),
    accepted!(
        "tls-session-cache-timeout",
        MUTABLE,
        Kind::Int(0, INT_MAX),
        "300"
    ),
    accepted!("syslog-enabled", IMMUTABLE, Kind::Bool, "no"),
    accepted!("syslog-ident", IMMUTABLE, Kind::Text, "redis"),
    accepted!(
        "syslog-facility",
        IMMUTABLE,
        Kind::Enum(&[
            "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"
        ]),
        "local0"
    ),
    accepted!("crash-log-enabled", MUTABLE, Kind::Bool, "yes"),
    accepted!("crash-memcheck-enabled", MUTABLE, Kind::Bool, "yes"),
    accepted!("always-show-logo", IMMUTABLE, Kind::Bool, "no"),
    accepted!("set-proc-title", IMMUTABLE, Kind::Bool, "yes"),
    accepted!(
        "proc-title-template",
        MUTABLE,
        Kind::Text,
        "{title} {listen-addr} {server-mode}"
    ),
    accepted!("save", MUTABLE, Kind::Save, ""),
    accepted!("stop-writes-on-bgsave-error", MUTABLE, Kind::Bool, "yes"),
    accepted!("rdbcompression", MUTABLE, Kind::Bool, "yes"),
    accepted!("rdbchecksum", IMMUTABLE, Kind::Bool, "yes"),
    accepted!(
        "sanitize-dump-payload",
        MUTABLE,
        Kind::Enum(&["no", "yes", "clients"]),
        "no"
    ),
    accepted!("dbfilename", MUTABLE, Kind::FileName, "dump.rdb"),
    accepted!("rdb-del-sync-files", MUTABLE, Kind::Bool, "no"),
    accepted!("replicaof", IMMUTABLE, Kind::ReplicaOf, ""),
    accepted!("masterauth", MUTABLE, Kind::Text, ""),
    accepted!("masteruser", MUTABLE, Kind::Text, ""),
    accepted!("replica-serve-stale-data", MUTABLE, Kind::Bool, "yes"),
    accepted!("replica-read-only", MUTABLE, Kind::Bool, "yes"),
    accepted!("repl-diskless-sync", MUTABLE, Kind::Bool, "yes"),
    accepted!(
        "repl-diskless-sync-delay",
        MUTABLE,
        Kind::Int(0, INT_MAX),
        "5"
    ),
    accepted!(
        "repl-diskless-sync-max-replicas",
        MUTABLE,
        Kind::Int(0, INT_MAX),
        "0"
    ),
    accepted!(
        "repl-diskless-load",
        MUTABLE,
        Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        "disabled"
    ),
    accepted!(
        "repl-ping-replica-period",
        MUTABLE,
        Kind::Int(1, INT_MAX),
        "10"
    ),
    accepted!("repl-timeout", MUTABLE, Kind::Int(1, INT_MAX), "60"),
    accepted!("repl-disable-tcp-nodelay", MUTABLE, Kind::Bool, "no"),
    accepted!(
        "repl-backlog-size",
        MUTABLE,
        Kind::Memory(1, MEM_MAX),
        "1048576"
    ),
    accepted!("repl-backlog-ttl", MUTABLE, Kind::Int(0, LONG_MAX), "3600"),
    accepted!("replica-priority", MUTABLE, Kind::Int(0, INT_MAX), "100"),
    accepted!("replica-announced", MUTABLE, Kind::Bool, "yes"),
    accepted!("min-replicas-to-write", MUTABLE, Kind::Int(0, INT_MAX), "0"),
    accepted!("min-replicas-max-lag", MUTABLE, Kind::Int(0, INT_MAX), "10"),
    accepted!("replica-announce-ip", MUTABLE, Kind::Text, ""),
    accepted!("replica-announce-port", MUTABLE, Kind::Int(0, 65535), "0"),
    accepted!("replica-ignore-maxmemory", MUTABLE, Kind::Bool, "yes"),
    accepted!(
        "replica-ignore-disk-write-errors",
        MUTABLE,
        Kind::Bool,
        "no"
    ),
    accepted!(
        "tracking-table-max-keys",
        MUTABLE,
        Kind::Int(0, LONG_MAX),
        "1000000"
    ),
    accepted!("acllog-max-len", MUTABLE, Kind::Int(0, LONG_MAX), "128"),
    accepted!("aclfile", IMMUTABLE, Kind::Text, ""),
    accepted!(
        "acl-pubsub-default",
        MUTABLE,
        Kind::Only(
            "resetchannels",
            "keel's new ACL users start with no channels (resetchannels, Redis 7.0's default)"
        ),
        "resetchannels"
    ),
    accepted!("maxmemory-samples", MUTABLE, Kind::Int(1, INT_MAX), "5"),
    accepted!(
        "maxmemory-eviction-tenacity",
        MUTABLE,
        Kind::Int(0, 100),
        "10"
    ),
    accepted!("active-expire-effort", MUTABLE, Kind::Int(1, 10), "1"),
    accepted!("io-threads", IMMUTABLE, Kind::Int(1, 128), "1"),
    accepted!("io-threads-do-reads", IMMUTABLE, Kind::Bool, "no"),
    accepted!(
        "oom-score-adj",
        MUTABLE,
        Kind::Enum(&["no", "yes", "relative=yes", "absolute"]),
        "no"
    ),
    accepted!(
        "oom-score-adj-values",
        MUTABLE,
        Kind::OomScoreAdjValues,
        "0 200 800"
    ),
    accepted!("disable-thp", IMMUTABLE, Kind::Bool, "yes"),
    accepted!("appendonly", MUTABLE, Kind::Bool, "no"),
    accepted!("appendfilename", IMMUTABLE, Kind::Text, "appendonly.aof"),
    accepted!("appenddirname", IMMUTABLE, Kind::Text, "appendonlydir"),
    accepted!(
        "appendfsync",
        MUTABLE,
        Kind::Enum(&["everysec", "always", "no"]),
        "everysec"
    ),
    accepted!("no-appendfsync-on-rewrite", MUTABLE, Kind::Bool, "no"),
    accepted!(
        "auto-aof-rewrite-percentage",
        MUTABLE,
        Kind::Int(0, INT_MAX),
        "100"
    ),
    accepted!(
        "auto-aof-rewrite-min-size",
        MUTABLE,
        Kind::Memory(0, MEM_MAX),
        "67108864"
    ),
    accepted!("aof-load-truncated", MUTABLE, Kind::Bool, "yes"),
    accepted!("aof-use-rdb-preamble", MUTABLE, Kind::Bool, "yes"),
    accepted!("aof-timestamp-enabled", MUTABLE, Kind::Bool, "no"),
    accepted!("aof-disable-auto-gc", MUTABLE, Kind::Bool, "no"),
    accepted!("aof-rewrite-incremental-fsync", MUTABLE, Kind::Bool, "yes"),
    accepted!("rdb-save-incremental-fsync", MUTABLE, Kind::Bool, "yes"),
    accepted!(
        "shutdown-on-sigint",
        MUTABLE,
        Kind::ShutdownFlags,
        "default"
    ),
    accepted!(
        "shutdown-on-sigterm",
        MUTABLE,
        Kind::ShutdownFlags,
        "default"
    ),
    accepted!("shutdown-timeout", MUTABLE, Kind::Int(0, INT_MAX), "10"),
    accepted!(
        "busy-reply-threshold",
        MUTABLE,
        Kind::Int(0, LONG_MAX),
        "5000"
    ),
    accepted!("cluster-enabled", IMMUTABLE, Kind::Bool, "no"),
    accepted!("cluster-config-file", IMMUTABLE, Kind::Text, "nodes.conf"),
    accepted!(
        "cluster-node-timeout",
        MUTABLE,
        Kind::Int(0, LONG_MAX),
        "15000"
    ),
    accepted!("cluster-port", IMMUTABLE, Kind::Int(0, 65535), "0"),
    accepted!(
        "cluster-replica-validity-factor",
        MUTABLE,
        Kind::Int(0, INT_MAX),
        "10"
    ),
    accepted!(
        "cluster-migration-barrier",
        MUTABLE,
        Kind::Int(0, INT_MAX),
        "1"
    ),
    accepted!(
        "cluster-allow-replica-migration",
        MUTABLE,
        Kind::Bool,
        "yes"
    ),
    accepted!("cluster-require-full-coverage", MUTABLE, Kind::Bool, "yes"),
    accepted!("cluster-replica-no-failover", MUTABLE, Kind::Bool, "no"),
    accepted!("cluster-allow-reads-when-down", MUTABLE, Kind::Bool, "no"),
    accepted!(
        "cluster-allow-pubsubshard-when-down",
        MUTABLE,
        Kind::Bool,
        "yes"
    ),
    accepted!(
        "cluster-link-sendbuf-limit",
        MUTABLE,
        Kind::Memory(0, u64::MAX),
        "0"
    ),
    accepted!("cluster-announce-hostname", MUTABLE, Kind::Text, ""),
    accepted!(
        "cluster-preferred-endpoint-type",
        MUTABLE,
        Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        "ip"
    ),
    accepted!("cluster-announce-ip", MUTABLE, Kind::Text, ""),
    accepted!("cluster-announce-port", MUTABLE, Kind::Int(0, 65535), "0"),
    accepted!(
        "cluster-announce-tls-port",
        MUTABLE,
        Kind::Int(0, 65535),
        "0"
    ),
    accepted!(
        "cluster-announce-bus-port",
        MUTABLE,
        Kind::Int(0, 65535),
        "0"
    ),
    accepted!("list-compress-depth", MUTABLE, Kind::Int(0, INT_MAX), "0"),
    accepted!("activerehashing", MUTABLE, Kind::Bool, "yes"),
    accepted!("hz", MUTABLE, Kind::IntCapped(0, INT_MAX, 1, 500), "10"),
    accepted!("dynamic-hz", MUTABLE, Kind::Bool, "yes"),
    accepted!("activedefrag", MUTABLE, Kind::Bool, "no"),
    accepted!(
        "active-defrag-ignore-bytes",
        MUTABLE,
        Kind::Memory(1, MEM_MAX),
        "104857600"
    ),
    accepted!(
        "active-defrag-threshold-lower",
        MUTABLE,
        Kind::Int(0, 1000),
        "10"
    ),
    accepted!(
        "active-defrag-threshold-upper",
        MUTABLE,
        Kind::Int(0, 1000),
        "100"
    ),
    accepted!("active-defrag-cycle-min", MUTABLE, Kind::Int(1, 99), "1"),
    accepted!("active-defrag-cycle-max", MUTABLE, Kind::Int(1, 99), "25"),
    accepted!(
        "active-defrag-max-scan-fields",
        MUTABLE,
        Kind::Int(1, LONG_MAX),
        "1000"
    ),
    accepted!("server_cpulist", IMMUTABLE, Kind::Text, ""),
    accepted!("bio_cpulist", IMMUTABLE, Kind::Text, ""),
    accepted!("aof_rewrite_cpulist", IMMUTABLE, Kind::Text, ""),
    accepted!("bgsave_cpulist", IMMUTABLE, Kind::Text, ""),
    accepted!("ignore-warnings", MUTABLE, Kind::Text, ""),
    accepted!(
        "enable-module-command",
        IMMUTABLE,
        Kind::Enum(&["no", "yes", "local"]),
        "no"
    ),
    accepted!(
        "propagation-error-behavior",
        MUTABLE,
        Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
        "ignore"
    ),
];

/// Directives CONFIG GET shows only when asked for by their exact name,
/// not through a pattern: Redis's testing knobs (keel accepts and ignores
/// them).
pub static HIDDEN: &[Directive] = &[
    accepted!(
        "key-load-delay",
        MUTABLE,
        Kind::Int(i32::MIN as i64, INT_MAX),
        "0"
    ),
    accepted!(
        "rdb-key-save-delay",
        MUTABLE,
        Kind::Int(i32::MIN as i64, INT_MAX),
        "0"
    ),
    accepted!(
        "loading-process-events-interval-bytes",
        MUTABLE,
        Kind::Int(1024, INT_MAX),
        "2097152"
    ),
    accepted!("watchdog-period", MUTABLE, Kind::Int(0, INT_MAX), "0"),
];

/// Other names Redis 7.0 takes for directives, as (alias, directive).
/// CONFIG GET answers under the name asked for, as Redis does.
pub static ALIASES: &[(&str, &str)] = &[
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("slaveof", "replicaof"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slave-read-only", "replica-read-only"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-priority", "replica-priority"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    ("lua-time-limit", "busy-reply-threshold"),
];

/// Directives Redis 7.0 still reads from a file and ignores (they no
/// longer mean anything); keel ignores them too.
pub static IGNORED: &[&str] = &[
    "list-max-ziplist-entries",
    "list-max-ziplist-value",
    "lua-replicate-commands",
];

/// redis.conf lines keel refuses at start-up, with why: each would change
/// who may run what, or which commands exist, and keel cannot do it yet.
pub static REFUSED: &[(&str, &str)] = &[
    (
        "rename-command",
        "keel can't rename commands yet; remove the line (or use requirepass)",
    ),
    ("loadmodule", "keel can't load Redis modules"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn values_are_checked_and_shown_as_redis_shows_them() {
        let shown = |kind, text| normalize(kind, &words(text));
        assert_eq!(
            shown(Kind::Memory(0, MEM_MAX), "64mb"),
            Ok("67108864".into())
        );
        assert_eq!(
            shown(Kind::Enum(&["no", "yes", "relative=yes"]), "RELATIVE"),
            Ok("yes".into())
        );
        assert_eq!(
            shown(Kind::Enum(&["no", "yes", "relative=yes"]), "x"),
            Err("argument(s) must be one of the following: no, yes, relative".into())
        );
        assert_eq!(
            shown(Kind::IntCapped(0, INT_MAX, 1, 500), "0"),
            Ok("1".into())
        );
        assert_eq!(
            shown(Kind::ShutdownFlags, "force NOW nosave"),
            Ok("nosave now force".into())
        );
        assert!(shown(Kind::ShutdownFlags, "default now").is_err());
        assert_eq!(shown(Kind::Octal, "755"), Ok("755".into()));
        assert!(shown(Kind::Octal, "9").is_err());
        assert_eq!(shown(Kind::ReplicaOf, "NO ONE"), Ok(String::new()));
        assert_eq!(
            shown(Kind::ReplicaOf, "10.0.0.1 6379"),
            Ok("10.0.0.1 6379".into())
        );
        assert!(shown(Kind::ReplicaOf, "10.0.0.1 port").is_err());
        assert!(shown(Kind::Only("0", NO_TLS), "6380").is_err());
        assert!(shown(Kind::FileName, "a/b.rdb").is_err());
    }

    #[test]
    fn save_takes_pairs_of_seconds_and_changes() {
        let save = |text: &str| normalize(Kind::Save, &[text.to_string()]);
        assert_eq!(save("3600 1 300 0"), Ok("3600 1 300 0".into()));
        assert_eq!(save(""), Ok(String::new()));
        assert!(save("0 1").is_err(), "seconds must be at least 1");
        assert!(save("100").is_err());
        assert!(save("x 1").is_err());
        // A file line gives the pairs as separate words.
        assert_eq!(
            normalize(Kind::Save, &words("900 1 60 10")),
            Ok("900 1 60 10".into())
        );
    }

    #[test]
    fn save_lines_in_a_file_add_up_and_an_empty_one_clears() {
        let mut config = Config::default();
        config
            .apply_text("save 900 1\nsave 300 10\n", "redis.conf")
            .unwrap();
        let save = |c: &Config| (crate::config::directive("save").unwrap().get)(c);
        assert_eq!(save(&config), "900 1 300 10");
        config
            .apply_text("save \"\"\nsave 60 5\n", "redis.conf")
            .unwrap();
        assert_eq!(save(&config), "60 5");
    }

    #[test]
    fn aliases_ignored_and_refused_lines_in_a_file() {
        let mut config = Config::default();
        config
            .apply_text(
                "hash-max-ziplist-entries 7\nslave-priority 3\nlist-max-ziplist-entries 1\n\
                 lua-time-limit 9\n",
                "redis.conf",
            )
            .unwrap();
        assert_eq!(config.encodings.hash_max_listpack_entries, 7);
        let get = |name: &str| (crate::config::directive(name).unwrap().get)(&config);
        assert_eq!(get("replica-priority"), "3");
        assert_eq!(get("busy-reply-threshold"), "9");
        let err = config
            .apply_text("rename-command CONFIG \"\"\n", "redis.conf")
            .unwrap_err();
        assert!(err.0.contains("can't rename commands"), "{}", err.0);
    }

    #[test]
    fn include_reads_matching_files_in_name_order() {
        let dir = std::env::temp_dir().join(format!("keel-include-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("b.conf"), "hz 30\n").unwrap();
        std::fs::write(dir.join("a.conf"), "hz 20\nmaxmemory-samples 9\n").unwrap();
        std::fs::write(dir.join("main.conf"), "include *.conf.d\ninclude ?.conf\n").unwrap();
        let mut config = Config::default();
        let main = dir.join("main.conf");
        let text = std::fs::read_to_string(&main).unwrap();
        config.apply_text(&text, main.to_str().unwrap()).unwrap();
        let get = |name: &str| (crate::config::directive(name).unwrap().get)(&config);
        assert_eq!(get("hz"), "30");
        assert_eq!(get("maxmemory-samples"), "9");
    }
}

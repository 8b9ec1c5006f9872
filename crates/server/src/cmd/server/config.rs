//! CONFIG GET | SET | RESETSTAT | REWRITE — read and change the
//! configuration at run time, with Redis 7's replies and errors.

use bytes::Bytes;

use crate::config::{directive, names, PROTECTED};
use crate::server::Server;

use crate::cmd::context::{errors, Ctx, Error, Spec, BASE, HELP};

/// CONFIG (container).
pub const SPEC: Spec = Spec {
    name: "config",
    arity: -2,
    acl: &["@slow"],
    group: "server",
    summary: "A container for server configuration commands",
    since: "2.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[&GET, &SET, &RESETSTAT, &REWRITE, &CONFIG_HELP],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    since: "2.0.0",
    ..BASE
};

const GET: Spec = Spec {
    name: "config|get",
    arity: -3,
    summary: "Get the values of configuration parameters",
    complexity: "O(N) when N is the number of configuration parameters provided",
    run: get,
    ..SUB
};

const SET: Spec = Spec {
    name: "config|set",
    arity: -4,
    summary: "Set configuration parameters to the given values",
    complexity: "O(N) when N is the number of configuration parameters provided",
    run: set,
    ..SUB
};

const RESETSTAT: Spec = Spec {
    name: "config|resetstat",
    arity: 2,
    summary: "Reset the stats returned by INFO",
    run: |ctx, _| {
        ctx.server.stats.reset();
        crate::lazyfree::reset_stats();
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const REWRITE: Spec = Spec {
    name: "config|rewrite",
    arity: 2,
    summary: "Rewrite the configuration file with the in memory configuration",
    since: "2.8.0",
    run: rewrite,
    ..SUB
};

const CONFIG_HELP: Spec = Spec {
    name: "config|help",
    group: "server",
    since: "5.0.0",
    ..HELP
};

fn get(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let config = ctx.server.config.read().clone();
    let is_pattern = |p: &[u8]| p.iter().any(|b| b"*?[".contains(b));
    let matched: Vec<_> = names()
        .filter(|&(name, _, hidden)| {
            args[2..].iter().any(|p| {
                if hidden && is_pattern(p) {
                    return false;
                }
                keel_store::glob_match(p, name.as_bytes(), true)
            })
        })
        .collect();
    let mut w = ctx.w();
    w.map(matched.len());
    for (name, d, _) in matched {
        w.bulk(name.as_bytes());
        w.bulk((d.get)(&config).as_bytes());
    }
    Ok(())
}

fn set(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if !args.len().is_multiple_of(2) {
        return Err(errors::SYNTAX.into());
    }
    let protected_allowed = ctx
        .server
        .config
        .read()
        .enable_protected_configs
        .allows(ctx.client.handle.addr);
    set_pairs(ctx.server, &args[2..], protected_allowed)?;
    ctx.w().ok();
    Ok(())
}

/// Sets each `name value` pair, all or none. The configuration stays
/// write-locked from the copy that is changed to the settings applied, so
/// a concurrent CONFIG SET of another directive neither works on a copy
/// without this change nor applies an older configuration after it.
/// `protected_allowed`: whether the caller may set [`PROTECTED`]
/// directives. Setting a directive that only takes effect at start-up to
/// the value it has changes nothing and succeeds (Redis refuses it), so
/// that CONFIG GET's values can all be given back to CONFIG SET. As in
/// Redis, every name is checked before any value.
fn set_pairs(server: &Server, pairs: &[Bytes], protected_allowed: bool) -> Result<(), Error> {
    let mut config = server.config.write();
    let mut next = config.clone();
    let mut seen = Vec::new();
    let mut changes = Vec::new();
    for pair in pairs.chunks(2) {
        let name = String::from_utf8_lossy(&pair[0]).into_owned();
        let Some(d) = directive(&name) else {
            return Err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
            )
            .into());
        };
        let value = String::from_utf8_lossy(&pair[1]).into_owned();
        // bind takes several addresses in one value, as in keel.conf.
        let words: Vec<String> = match d.name {
            "bind" => value.split_whitespace().map(String::from).collect(),
            _ => vec![value],
        };
        if !d.mutable {
            let mut probe = next.clone();
            let unchanged =
                (d.set)(&mut probe, &words).is_ok() && (d.get)(&probe) == (d.get)(&next);
            if !unchanged {
                return Err(set_failed(&name, "can't set immutable config"));
            }
        }
        if PROTECTED.contains(&d.name) && !protected_allowed {
            return Err(set_failed(&name, "can't set protected config"));
        }
        // Redis tells duplicates by the name given: a directive and its
        // alias may be set together (the last one wins).
        let given = name.to_ascii_lowercase();
        if seen.contains(&given) {
            return Err(set_failed(&name, "duplicate parameter"));
        }
        seen.push(given);
        if d.mutable {
            changes.push((name, d, words));
        }
    }
    for (name, d, words) in changes {
        (d.set)(&mut next, &words).map_err(|e| set_failed(&name, &e))?;
    }
    if next.port != config.port || next.bind != config.bind {
        server
            .listen_instead(&next.bind, next.port, next.tcp_backlog)
            .map_err(|e| {
                let (name, why) = if next.port != config.port {
                    ("port", "Unable to listen on this port")
                } else {
                    ("bind", "Failed to bind to specified addresses")
                };
                set_failed(name, &format!("{why}: {}", crate::config::strerror(&e)))
            })?;
    }
    // A no-op unless a TLS directive changed (it compares them).
    server.tls.apply(&next).map_err(|e| {
        crate::warning!("Failed to update TLS configuration: {e}");
        let name = (pairs.chunks(2))
            .map(|pair| String::from_utf8_lossy(&pair[0]).to_ascii_lowercase())
            .find(|name| crate::tls::DIRECTIVES.contains(&name.as_str()))
            .unwrap_or_default();
        set_failed(
            &name,
            "Unable to update TLS configuration. Check server logs.",
        )
    })?;
    if next.dir != config.dir {
        next.dir = crate::config::change_dir(&next.dir).map_err(|e| set_failed("dir", &e))?;
    }
    *config = next;
    server.apply(&config);
    Ok(())
}

fn set_failed(name: &str, why: &str) -> Error {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}").into()
}

fn rewrite(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let config = ctx.server.config.read().clone();
    let Some(path) = config.config_file.clone() else {
        return Err("ERR The server is running without a config file".into());
    };
    config
        .rewrite(&path)
        .map_err(|e| Error::from(format!("ERR Rewriting config file: {e}")))?;
    ctx.w().ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CONFIG SETs of different directives at once both stick, in the
    /// configuration and in the settings applied from it.
    #[test]
    fn concurrent_sets_of_different_directives_both_stick() {
        let server = Server::new(crate::config::Config::default(), 0).expect("no ACL users");
        let pairs = |name: &str, value: String| [Bytes::from(name.to_owned()), Bytes::from(value)];
        for round in 0..200u64 {
            std::thread::scope(|scope| {
                let server = &server;
                scope.spawn(move || set_pairs(server, &pairs("timeout", round.to_string()), false));
                scope.spawn(move || {
                    set_pairs(
                        server,
                        &pairs("slowlog-max-len", (round + 1).to_string()),
                        false,
                    )
                });
            });
            let config = server.config.read();
            assert_eq!(
                (config.timeout, config.slowlog_max_len),
                (round, round + 1),
                "round {round}"
            );
            let applied = server
                .hot
                .timeout_secs
                .load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(applied, round, "round {round}: applied");
        }
    }
}

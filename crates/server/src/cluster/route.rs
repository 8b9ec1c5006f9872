//! Which node serves a request, as Redis's `getNodeByQuery` decides it.
//!
//! Every key a request names (for EXEC, every key of every queued command)
//! must hash to one slot, or the request gets `-CROSSSLOT`. A request
//! naming no key runs here. Otherwise:
//!
//! - a slot no node serves, or any key while the cluster is down, gets
//!   `-CLUSTERDOWN` (reads are let through with
//!   `cluster-allow-reads-when-down`);
//! - a slot this node is migrating is served here while every key the
//!   request names is still here; if none is, the client is sent to the
//!   target with `-ASK`; if only some are, it gets `-TRYAGAIN`, since the
//!   request could be served by neither node alone;
//! - a slot this node is importing is served only after ASKING (or to
//!   RESTORE-ASKING), and `-TRYAGAIN` if a multi-key request finds only
//!   some of its keys;
//! - a replica serves reads of its primary's slots to READONLY clients;
//! - any other slot served elsewhere gets `-MOVED` to its owner.
//!
//! Shard channels (SPUBLISH, SSUBSCRIBE) hash to slots as keys do, but are
//! never looked up: a shard channel stays with the slot's owner until the
//! slot has moved.

use bytes::Bytes;

use super::{Cluster, View};
use crate::cmd::context::{keys_of, Spec};
use crate::server::Server;

/// Why a request is not served here, as the error Redis gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Redirect {
    Moved { slot: u16, address: String },
    Ask { slot: u16, address: String },
    CrossSlot,
    TryAgain,
    Down,
    DownReadOnly,
    Unbound,
}

impl Redirect {
    /// Redis's error text, without the `-`.
    pub fn error(&self) -> String {
        match self {
            Redirect::Moved { slot, address } => format!("MOVED {slot} {address}"),
            Redirect::Ask { slot, address } => format!("ASK {slot} {address}"),
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::TryAgain => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::Down => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownReadOnly => {
                "CLUSTERDOWN The cluster is down and only accepts read commands".into()
            }
            Redirect::Unbound => "CLUSTERDOWN Hash slot not served".into(),
        }
    }
}

/// Whether a command names keys or shard channels the cluster must route:
/// the check is skipped for every other command, EXEC aside.
pub fn names_keys(spec: &Spec) -> bool {
    spec.keys != (0, 0, 0) || spec.has_flag("movablekeys") || spec.name == "exec"
}

/// Whether command `spec` names shard channels rather than keys.
fn names_shard_channels(spec: &Spec) -> bool {
    matches!(spec.name, "spublish" | "ssubscribe" | "sunsubscribe")
}

/// Calls `visit` with each slot-hashed name `args` gives command `spec`
/// (its keys, or its shard channels), stopping at the first error. Keys
/// at fixed positions are visited without collecting them.
fn visit_names<'a>(
    spec: &Spec,
    args: &'a [Bytes],
    mut visit: impl FnMut(&'a Bytes) -> Result<(), Redirect>,
) -> Result<(), Redirect> {
    match spec.name {
        "spublish" => args.get(1).map_or(Ok(()), visit),
        "ssubscribe" | "sunsubscribe" => args[1..].iter().try_for_each(visit),
        _ if spec.getkeys.is_none() && !spec.has_flag("movablekeys") => {
            (spec.key_positions(args.len())).try_for_each(|i| visit(&args[i]))
        }
        _ => (keys_of(spec, args).unwrap_or_default())
            .into_iter()
            .try_for_each(visit),
    }
}

/// What a request is, for routing.
pub struct Request<'a> {
    /// Its commands: one, or EXEC's queue.
    pub commands: &'a [(&'static Spec, &'a [Bytes])],
    /// One of them writes.
    pub writes: bool,
    /// The command routed is MIGRATE.
    pub is_migrate: bool,
    /// The client sent ASKING, or the command has Redis's `asking` flag
    /// (RESTORE-ASKING).
    pub asking: bool,
    /// The client sent READONLY.
    pub readonly: bool,
}

/// Where `request` is served: `Ok` here, or the redirection.
pub fn route(
    server: &Server,
    cluster: &Cluster,
    view: &View,
    request: &Request,
    now_ms: u64,
) -> Result<(), Redirect> {
    let mut first: Option<(&Bytes, u16)> = None;
    let (mut multiple_keys, mut shard_channels) = (false, false);
    let (mut missing, mut existing) = (0usize, 0usize);
    let me = view.me();
    let mut moving = Moving::No;
    for &(spec, args) in request.commands {
        let channels = names_shard_channels(spec);
        shard_channels |= channels;
        visit_names(spec, args, |name| {
            let slot = keel_topology::key_slot(name);
            match first {
                None => {
                    first = Some((name, slot));
                    let Some(serves_here) = view.served_here(slot) else {
                        return Err(Redirect::Unbound);
                    };
                    moving = if serves_here && me.migrating.contains_key(&slot) {
                        Moving::Out
                    } else if !serves_here && me.importing.contains_key(&slot) {
                        Moving::In
                    } else {
                        Moving::No
                    };
                }
                Some((first_name, first_slot)) => {
                    if slot != first_slot {
                        return Err(Redirect::CrossSlot);
                    }
                    multiple_keys |= name != first_name;
                }
            }
            if moving != Moving::No && !channels {
                let db = server.store.db(0, now_ms).without_touch();
                if db.read(name).get(name).is_some() {
                    existing += 1;
                } else {
                    missing += 1;
                }
            }
            Ok(())
        })?;
    }
    let Some((_, slot)) = first else {
        return Ok(());
    };
    if !cluster.is_ok(view) {
        let reads_allowed = cluster
            .allow_reads_when_down
            .load(std::sync::atomic::Ordering::Relaxed);
        if !reads_allowed {
            return Err(Redirect::Down);
        }
        if request.writes {
            return Err(Redirect::DownReadOnly);
        }
    }
    if moving != Moving::No && request.is_migrate {
        return Ok(());
    }
    let address_of = |id: &str| view.topology.node(id).map(|n| n.address());
    if moving == Moving::Out && missing > 0 {
        if existing > 0 {
            return Err(Redirect::TryAgain);
        }
        let target = &me.migrating[&slot];
        return match address_of(target) {
            Some(address) => Err(Redirect::Ask { slot, address }),
            None => Err(Redirect::Unbound),
        };
    }
    if moving == Moving::In && request.asking {
        if multiple_keys && missing > 0 {
            return Err(Redirect::TryAgain);
        }
        return Ok(());
    }
    if view.served_here(slot) == Some(true) {
        return Ok(());
    }
    let owner = view.owner(slot).expect("checked above");
    let reads_its_primary = me.primary_id() == Some(owner.id.as_str());
    if (request.readonly || shard_channels) && !request.writes && reads_its_primary {
        return Ok(());
    }
    Err(Redirect::Moved {
        slot,
        address: owner.address(),
    })
}

/// The error that ends the wait of a client blocked on `key` (BLPOP and
/// the like) once the view changed, as Redis's
/// `clusterRedirectBlockedClientIfNeeded` decides: the cluster is down, or
/// the key's slot is served elsewhere and not imported here. A blocked
/// client names keys of one slot only, so its first key decides.
pub fn blocked_key_error(cluster: &Cluster, view: &View, key: &[u8]) -> Option<crate::cmd::Error> {
    if !cluster.is_ok(view) {
        return Some(Redirect::Down.error().into());
    }
    let slot = keel_topology::key_slot(key);
    let redirect = match view.served_here(slot) {
        None => Redirect::Unbound,
        Some(true) => return None,
        Some(false) if view.me().importing.contains_key(&slot) => return None,
        Some(false) => Redirect::Moved {
            slot,
            address: view.owner(slot).expect("served elsewhere").address(),
        },
    };
    Some(redirect.error().into())
}

/// Whether the request's slot is moving, seen from this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moving {
    No,
    /// This node serves it and is migrating it.
    Out,
    /// Another node serves it and this one is importing it.
    In,
}

//! What the cluster commands share: the node's cluster state, refused
//! with Redis's error when cluster mode is off, and slot arguments.

use bytes::Bytes;

use super::{Ctx, Error};
pub use crate::cluster::{apply_view, Cluster, View};
pub use keel_topology::{key_slot, parse_slot, Node, Role, Topology, NO_OWNER, SLOTS};

/// The node's cluster state, or Redis's error when cluster mode is off.
pub fn cluster<'a>(ctx: &Ctx<'a>) -> Result<&'a Cluster, Error> {
    ctx.server
        .cluster
        .as_ref()
        .ok_or_else(|| "ERR This instance has cluster support disabled".into())
}

/// A slot argument, with Redis's error.
pub fn slot_arg(arg: &Bytes) -> Result<u16, Error> {
    parse_slot(arg).ok_or_else(|| "ERR Invalid or out of range slot".into())
}

/// A change to the node's view refused, as an error reply.
pub fn refused(message: String) -> Error {
    if message.starts_with("ERR ") {
        message.into()
    } else {
        format!("ERR {message}").into()
    }
}

/// Gives this node a config epoch of its own, newer than every other,
/// unless it has one already (Redis's
/// `clusterBumpConfigEpochWithoutConsensus`). Returns whether it bumped.
pub fn bump_epoch(topology: &mut Topology, myself: &str) -> bool {
    let highest = topology
        .nodes
        .iter()
        .map(|n| n.config_epoch)
        .max()
        .unwrap_or(0);
    let mine = topology.node(myself).map_or(0, |n| n.config_epoch);
    if mine != 0 && mine == highest {
        return false;
    }
    topology.current_epoch += 1;
    let epoch = topology.current_epoch;
    if let Some(me) = topology.node_mut(myself) {
        me.config_epoch = epoch;
    }
    true
}

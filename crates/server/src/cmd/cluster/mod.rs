//! Cluster commands (`cluster.c`): CLUSTER and its subcommands, ASKING,
//! READONLY and READWRITE. Each answers from, or changes, this node's view
//! of the cluster (`crate::cluster`); without `cluster-enabled` they all
//! refuse with Redis's error.

pub mod asking;
mod epoch;
mod info;
mod keyslot;
mod membership;
mod setslot;
mod slots;
mod topology;

use crate::cmd::context::{Spec, BASE, HELP};

/// CLUSTER (container).
pub const SPEC: Spec = Spec {
    name: "cluster",
    arity: -2,
    acl: &["@slow"],
    group: "cluster",
    summary: "A container for cluster commands",
    since: "3.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &info::INFO,
        &info::MYID,
        &info::NODES,
        &info::SLOTS,
        &info::SHARDS,
        &info::REPLICAS,
        &info::SLAVES,
        &info::LINKS,
        &info::COUNT_FAILURE_REPORTS,
        &keyslot::KEYSLOT,
        &keyslot::COUNTKEYSINSLOT,
        &keyslot::GETKEYSINSLOT,
        &slots::ADDSLOTS,
        &slots::ADDSLOTSRANGE,
        &slots::DELSLOTS,
        &slots::DELSLOTSRANGE,
        &slots::FLUSHSLOTS,
        &setslot::SETSLOT,
        &membership::MEET,
        &membership::FORGET,
        &membership::REPLICATE,
        &membership::RESET,
        &membership::FAILOVER,
        &epoch::SET_CONFIG_EPOCH,
        &epoch::BUMPEPOCH,
        &epoch::SAVECONFIG,
        &topology::SETTOPOLOGY,
        &CLUSTER_HELP,
    ],
    ..BASE
};

/// What the subcommands that read the view share.
const READ: Spec = Spec {
    flags: &["stale"],
    acl: &["@slow"],
    group: "cluster",
    since: "3.0.0",
    ..BASE
};

/// What the subcommands that change the view share.
const ADMIN: Spec = Spec {
    flags: &["admin", "stale", "no_async_loading"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "cluster",
    since: "3.0.0",
    ..BASE
};

const CLUSTER_HELP: Spec = Spec {
    name: "cluster|help",
    group: "cluster",
    since: "5.0.0",
    ..HELP
};

//! Redis Cluster's topology, as a node and a control plane both see it: the
//! 16384 hash slots and how a key maps to one ([`slot`]), the nodes and
//! which slots each serves ([`Topology`]), and the line format Redis uses
//! for both CLUSTER NODES and the `nodes.conf` file ([`Topology::parse`],
//! [`Topology::render`]). No networking: `keel-server` keeps a node's view
//! and answers clients from it, and `keel-cluster` (the control plane)
//! builds views and pushes them to nodes.
//!
//! keel invents no distributed protocol: there is no gossip and no
//! election. A topology carries a version (the cluster's current epoch);
//! a node takes a pushed topology only if it is newer than its own (see
//! `docs/cluster.md`).

pub mod slot;
mod slots;
mod topology;

pub use slot::{crc16, key_slot, SLOTS};
pub use slots::{parse_slot, ranges, SlotRange};
pub use topology::{is_node_id, Node, ParseError, Parsed, Role, Topology, NO_OWNER};

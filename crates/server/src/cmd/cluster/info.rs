//! CLUSTER INFO | MYID | NODES | SLOTS | SHARDS | REPLICAS | SLAVES |
//! LINKS | COUNT-FAILURE-REPORTS — the node's view of the cluster, in the
//! forms clients read at start-up: redis-py, go-redis, ioredis and Jedis
//! read SLOTS, Lettuce and redis-rb NODES, ioredis's ready check INFO.

use bytes::Bytes;
use keel_resp::Writer;

use super::READ;
use crate::cmd::context::cluster::{cluster, Node, View, SLOTS as HASH_SLOTS};
use crate::cmd::context::{Ctx, Error, Spec};

pub const INFO: Spec = Spec {
    name: "cluster|info",
    arity: 2,
    summary: "Provides info about Redis Cluster node state",
    run: info,
    ..READ
};

pub const MYID: Spec = Spec {
    name: "cluster|myid",
    arity: 2,
    summary: "Return the node id",
    run: |ctx, _| {
        let id = cluster(ctx)?.view().me().id.clone();
        ctx.w().bulk(id.as_bytes());
        Ok(())
    },
    ..READ
};

pub const NODES: Spec = Spec {
    name: "cluster|nodes",
    arity: 2,
    summary: "Get Cluster config for the node",
    complexity: "O(N) where N is the total number of Cluster nodes",
    run: nodes,
    ..READ
};

pub const SLOTS: Spec = Spec {
    name: "cluster|slots",
    arity: 2,
    summary: "Get array of Cluster slot to node mappings",
    complexity: "O(N) where N is the total number of Cluster nodes",
    run: slots,
    ..READ
};

pub const SHARDS: Spec = Spec {
    name: "cluster|shards",
    arity: 2,
    summary: "Get array of cluster slots to node mappings",
    since: "7.0.0",
    complexity: "O(N) where N is the total number of cluster nodes",
    run: shards,
    ..READ
};

pub const REPLICAS: Spec = Spec {
    name: "cluster|replicas",
    arity: 3,
    flags: &["admin", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    summary: "List replica nodes of the specified master node",
    since: "5.0.0",
    run: replicas,
    ..READ
};

pub const SLAVES: Spec = Spec {
    name: "cluster|slaves",
    since: "3.0.0",
    ..REPLICAS
};

pub const LINKS: Spec = Spec {
    name: "cluster|links",
    arity: 2,
    summary: "Returns a list of all TCP links to and from peer nodes in cluster",
    since: "7.0.0",
    complexity: "O(N) where N is the total number of Cluster nodes",
    // No cluster bus, so no links.
    run: |ctx, _| {
        cluster(ctx)?;
        ctx.w().array(0);
        Ok(())
    },
    ..READ
};

pub const COUNT_FAILURE_REPORTS: Spec = Spec {
    name: "cluster|count-failure-reports",
    arity: 3,
    flags: &["admin", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    summary: "Return the number of failure reports active for a given node",
    complexity: "O(N) where N is the number of failure reports",
    // Nodes report no failures to each other: there is no cluster bus.
    run: |ctx, args| {
        let view = cluster(ctx)?.view();
        known_node(&view, &args[2])?;
        ctx.w().integer(0);
        Ok(())
    },
    ..READ
};

/// The node named by argument `arg`, or Redis's error.
pub fn known_node<'v>(view: &'v View, arg: &Bytes) -> Result<&'v Node, Error> {
    let id = String::from_utf8_lossy(arg);
    view.topology
        .node(&id)
        .ok_or_else(|| format!("ERR Unknown node {id}").into())
}

fn info(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let view = cluster.view();
    let assigned = view.topology.assigned_slots();
    let failed = (view.topology.nodes.iter())
        .filter(|n| n.failed)
        .map(Node::slot_count)
        .sum::<usize>();
    let me = view.me();
    let my_epoch = me
        .primary_id()
        .and_then(|id| view.topology.node(id))
        .unwrap_or(me)
        .config_epoch;
    let state = if cluster.is_ok(&view) { "ok" } else { "fail" };
    let text = format!(
        "cluster_state:{state}\r\n\
         cluster_slots_assigned:{assigned}\r\n\
         cluster_slots_ok:{}\r\n\
         cluster_slots_pfail:0\r\n\
         cluster_slots_fail:{failed}\r\n\
         cluster_known_nodes:{}\r\n\
         cluster_size:{}\r\n\
         cluster_current_epoch:{}\r\n\
         cluster_my_epoch:{my_epoch}\r\n\
         cluster_stats_messages_sent:0\r\n\
         cluster_stats_messages_received:0\r\n\
         total_cluster_links_buffer_limit_exceeded:0\r\n",
        assigned - failed,
        view.topology.nodes.len(),
        view.serving_primaries(),
        view.topology.current_epoch,
    );
    ctx.w().verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// CLUSTER NODES' lines as of `now_ms`: every link counts as connected,
/// since no node probes another (see `docs/cluster.md`).
pub fn node_lines(view: &View, now_ms: u64) -> String {
    let me = view.me().id.as_str();
    view.topology.render(Some(me), |node| {
        let pong = if node.id == me { 0 } else { now_ms };
        (0, pong, true)
    })
}

fn nodes(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let view = cluster(ctx)?.view();
    let text = node_lines(&view, ctx.now_ms);
    ctx.w().verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// A node as CLUSTER SLOTS lists it: endpoint, port, id, and a map of
/// further endpoints (its hostname, when it has one).
fn write_slot_node(w: &mut Writer, node: &Node) {
    w.array(4);
    w.bulk(node.ip.as_bytes());
    w.integer(node.port.into());
    w.bulk(node.id.as_bytes());
    if node.hostname.is_empty() {
        w.map(0);
    } else {
        w.map(1);
        w.bulk(b"hostname");
        w.bulk(node.hostname.as_bytes());
    }
}

fn slots(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let view = cluster(ctx)?.view();
    let mut ranges: Vec<(u16, u16, &Node)> = Vec::new();
    for slot in 0..HASH_SLOTS as u16 {
        let Some(owner) = view.owner(slot) else {
            continue;
        };
        match ranges.last_mut() {
            Some((_, last, node)) if *last + 1 == slot && node.id == owner.id => *last = slot,
            _ => ranges.push((slot, slot, owner)),
        }
    }
    let mut w = ctx.w();
    w.array(ranges.len());
    for (first, last, owner) in ranges {
        let replicas: Vec<&Node> = view.replicas_of(&owner.id).filter(|r| !r.failed).collect();
        w.array(3 + replicas.len());
        w.integer(first.into());
        w.integer(last.into());
        write_slot_node(&mut w, owner);
        for replica in replicas {
            write_slot_node(&mut w, replica);
        }
    }
    Ok(())
}

fn shards(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let view = cluster(ctx)?.view();
    let offset = ctx.server.replication.status().offset;
    let primaries: Vec<&Node> = view
        .topology
        .nodes
        .iter()
        .filter(|n| n.is_primary())
        .collect();
    let mut w = ctx.w();
    w.array(primaries.len());
    for primary in primaries {
        w.map(2);
        w.bulk(b"slots");
        w.array(primary.slots.len() * 2);
        for &(first, last) in &primary.slots {
            w.integer(first.into());
            w.integer(last.into());
        }
        w.bulk(b"nodes");
        let members: Vec<&Node> = std::iter::once(primary)
            .chain(view.replicas_of(&primary.id))
            .collect();
        w.array(members.len());
        for node in members {
            let fields = 7 + usize::from(!node.hostname.is_empty());
            w.map(fields);
            w.bulk(b"id");
            w.bulk(node.id.as_bytes());
            w.bulk(b"port");
            w.integer(node.port.into());
            w.bulk(b"ip");
            w.bulk(node.ip.as_bytes());
            w.bulk(b"endpoint");
            w.bulk(node.ip.as_bytes());
            if !node.hostname.is_empty() {
                w.bulk(b"hostname");
                w.bulk(node.hostname.as_bytes());
            }
            w.bulk(b"role");
            w.bulk(if node.is_primary() {
                b"master"
            } else {
                b"replica"
            });
            w.bulk(b"replication-offset");
            // Only this node's own offset is known here.
            let known = node.id == view.me().id;
            w.integer(if known { offset as i64 } else { 0 });
            w.bulk(b"health");
            w.bulk(if node.failed { b"fail" } else { b"online" });
        }
    }
    Ok(())
}

fn replicas(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let view = cluster(ctx)?.view();
    let primary = known_node(&view, &args[2])?;
    if !primary.is_primary() {
        return Err("ERR The specified node is not a master".into());
    }
    let lines = node_lines(&view, ctx.now_ms);
    let replica_lines: Vec<&str> = lines
        .lines()
        .filter(|line| line.split(' ').nth(3) == Some(primary.id.as_str()))
        .collect();
    let mut w = ctx.w();
    w.array(replica_lines.len());
    for line in replica_lines {
        w.bulk(line.as_bytes());
    }
    Ok(())
}

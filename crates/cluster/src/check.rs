//! `keel-cluster check HOST:PORT`: every node reachable, every node
//! agreeing on who serves which slot, no slot left moving, every slot
//! served. Prints what `redis-cli --cluster check` prints, so operators
//! read one format.

use keel_topology::{ranges, Topology, SLOTS};

use crate::cluster::Cluster;

/// Checks the cluster `entry` belongs to; `Ok(true)` if it is healthy.
pub fn check(entry: &str) -> Result<bool, String> {
    let mut cluster = Cluster::load(entry)?;
    let topology = cluster.topology();
    summary(&mut cluster, &topology);
    println!(">>> Performing Cluster Check (using node {entry})");
    for node in &topology.nodes {
        let role = if node.is_primary() { "M" } else { "S" };
        println!("{role}: {} {}", node.id, node.address());
        if node.is_primary() {
            println!(
                "   slots:{} ({} slots) master",
                slot_list(node.served()),
                node.slot_count()
            );
            let replicas = topology
                .nodes
                .iter()
                .filter(|r| r.primary_id() == Some(&node.id))
                .count();
            if replicas > 0 {
                println!("   {replicas} additional replica(s)");
            }
        } else {
            println!("   slots: (0 slots) slave");
            println!("   replicates {}", node.primary_id().unwrap_or("-"));
        }
    }
    let mut healthy = true;
    let unreachable: Vec<&str> = (cluster.members.iter())
        .filter(|m| m.conn.is_none())
        .map(|m| m.address.as_str())
        .collect();
    if !unreachable.is_empty() {
        println!("[ERR] Nodes cannot be reached: {}", unreachable.join(", "));
        healthy = false;
    }
    let signatures: Vec<String> = (cluster.members.iter())
        .filter_map(|m| m.view.as_ref())
        .map(signature)
        .collect();
    if signatures.windows(2).all(|w| w[0] == w[1]) {
        println!("[OK] All nodes agree about slots configuration.");
    } else {
        println!("[ERR] Nodes don't agree about configuration!");
        healthy = false;
    }
    println!(">>> Check for open slots...");
    let mut open = Vec::new();
    for member in &cluster.members {
        let Some(own) = member.itself() else { continue };
        for (state, moving) in [("migrating", &own.migrating), ("importing", &own.importing)] {
            if moving.is_empty() {
                continue;
            }
            let slots: Vec<String> = moving.keys().map(u16::to_string).collect();
            println!(
                "[WARNING] Node {} has slots in {state} state {}.",
                member.address,
                slots.join(",")
            );
            open.extend(moving.keys().copied());
        }
    }
    if !open.is_empty() {
        open.sort_unstable();
        open.dedup();
        let slots: Vec<String> = open.iter().map(u16::to_string).collect();
        println!(
            "[WARNING] The following slots are open: {}.",
            slots.join(",")
        );
        healthy = false;
    }
    println!(">>> Check slots coverage...");
    if topology.assigned_slots() == SLOTS {
        println!("[OK] All {SLOTS} slots covered.");
    } else {
        println!("[ERR] Not all {SLOTS} slots are covered by nodes.");
        healthy = false;
    }
    Ok(healthy)
}

/// One line per primary: keys, slots, replicas, as redis-cli shows them.
fn summary(cluster: &mut Cluster, topology: &Topology) {
    let (mut total_keys, mut primaries) = (0, 0);
    for node in topology.nodes.iter().filter(|n| n.is_primary()) {
        let replicas = topology
            .nodes
            .iter()
            .filter(|r| r.primary_id() == Some(&node.id))
            .count();
        let keys = (cluster.member(&node.id).ok())
            .and_then(|m| m.conn().ok())
            .and_then(|c| c.integer(&["DBSIZE"]).ok());
        let shown = keys.map_or_else(|| "?".to_string(), |k| k.to_string());
        println!(
            "{} ({}...) -> {shown} keys | {} slots | {replicas} slaves.",
            node.address(),
            &node.id[..8],
            node.slot_count()
        );
        total_keys += keys.unwrap_or(0);
        primaries += 1;
    }
    let average = total_keys as f64 / f64::from(primaries.max(1));
    println!("[OK] {total_keys} keys in {primaries} masters.");
    println!(
        "{:.2} keys per slot on average.",
        average * f64::from(primaries) / SLOTS as f64
    );
}

/// Slots as redis-cli lists them: `[0-5460],[5462]`.
pub fn slot_list(slots: impl IntoIterator<Item = u16>) -> String {
    let shown: Vec<String> = ranges(slots)
        .into_iter()
        .map(|(first, last)| match first == last {
            true => format!("[{first}]"),
            false => format!("[{first}-{last}]"),
        })
        .collect();
    shown.join(",")
}

/// What must be the same in every node's view: each node's role and slots.
fn signature(view: &Topology) -> String {
    let mut lines: Vec<String> = (view.nodes.iter())
        .map(|n| format!("{} {:?} {:?}", n.id, n.role, n.slots))
        .collect();
    lines.sort();
    lines.join("\n")
}

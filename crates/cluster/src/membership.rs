//! `keel-cluster add-node`, `del-node` and `failover`: which nodes form
//! the cluster and which one serves a shard. Each builds the new topology
//! from what the nodes say and pushes it to all of them at a new epoch;
//! nothing else tells them (there is no cluster bus).

use keel_topology::Role;

use crate::cluster::Cluster;
use crate::create::new_node;

/// `add-node NEW EXISTING [--replica-of ID]`: `NEW` joins as a primary
/// serving no slot (give it some with reshard or rebalance), or as a
/// replica of primary `ID`.
pub fn add_node(new: &str, existing: &str, replica_of: Option<&str>) -> Result<(), String> {
    let mut cluster = Cluster::load(existing)?;
    let mut topology = cluster.topology();
    let (mut conn, mut node) = new_node(new)?;
    if let Some(primary) = replica_of {
        let p = topology.node(primary).ok_or(format!("no node {primary}"))?;
        if !p.is_primary() {
            return Err(format!(
                "{primary} is a replica; a replica follows a primary"
            ));
        }
        node.config_epoch = p.config_epoch;
        node.role = Role::Replica(primary.to_string());
    }
    println!(
        ">>> Adding node {new} ({}) to the cluster of {existing}",
        node.id
    );
    topology.nodes.push(node);
    let epoch = cluster.push(&mut topology, Some(&mut conn))?;
    println!("[OK] New node added correctly (topology epoch {epoch}).");
    Ok(())
}

/// `del-node HOST:PORT ID`: node `ID`, which must serve no slot, leaves;
/// its replicas follow the primary with the fewest replicas; it forgets
/// the cluster (CLUSTER RESET).
pub fn del_node(entry: &str, id: &str) -> Result<(), String> {
    let mut cluster = Cluster::load(entry)?;
    let mut topology = cluster.topology();
    let node = topology
        .node(id)
        .ok_or(format!("no node {id} in the cluster"))?;
    if node.slot_count() > 0 {
        return Err(format!(
            "Node {} is not empty! Reshard data away and try again.",
            node.address()
        ));
    }
    println!(">>> Removing node {id} from cluster {entry}");
    topology.nodes.retain(|n| n.id != id);
    let adopter = (topology.nodes.iter())
        .filter(|n| n.is_primary())
        .min_by_key(|p| {
            topology
                .nodes
                .iter()
                .filter(|r| r.primary_id() == Some(&p.id))
                .count()
        })
        .map(|p| p.id.clone());
    for node in &mut topology.nodes {
        if node.primary_id() == Some(id) {
            let adopter = adopter.clone().ok_or("no primary left to follow")?;
            println!(">>> {} replicates {adopter} now", node.address());
            node.role = Role::Replica(adopter);
        }
    }
    let mut leaving = cluster.members.remove(
        (cluster.members.iter())
            .position(|m| m.id == id)
            .ok_or(format!("no node {id}"))?,
    );
    cluster.push(&mut topology, None)?;
    if let Some(conn) = leaving.conn.as_mut() {
        println!(">>> Sending CLUSTER RESET SOFT to the deleted node.");
        conn.call(&["CLUSTER", "RESET", "SOFT"])?;
    }
    println!("[OK] Node {id} removed.");
    Ok(())
}

/// `failover HOST:PORT REPLICA_ID`: the replica takes over its primary's
/// slots at once. The old primary, if it answers, becomes its replica;
/// if not, it is marked failed and serves nothing. The primary's other
/// replicas follow the new one.
pub fn failover(entry: &str, replica: &str) -> Result<(), String> {
    let mut cluster = Cluster::load(entry)?;
    let mut topology = cluster.topology();
    let old = match topology.node(replica).map(|n| n.role.clone()) {
        Some(Role::Replica(primary)) => primary,
        Some(Role::Primary) => return Err(format!("{replica} is a primary already")),
        None => return Err(format!("no node {replica} in the cluster")),
    };
    let old_answers = cluster.member(&old).is_ok_and(|m| m.conn.is_some());
    let slots = topology
        .node(&old)
        .map(|n| n.slots.clone())
        .unwrap_or_default();
    let epoch = topology.current_epoch + 1;
    for node in &mut topology.nodes {
        if node.id == replica {
            node.role = Role::Primary;
            node.slots = slots.clone();
            node.config_epoch = epoch;
        } else if node.id == old {
            node.slots.clear();
            node.role = Role::Replica(replica.to_string());
            node.failed = !old_answers;
        } else if node.primary_id() == Some(old.as_str()) {
            node.role = Role::Replica(replica.to_string());
        }
    }
    if !old_answers {
        println!("[WARNING] The old primary {old} does not answer: marked failed");
    }
    let epoch = cluster.push(&mut topology, None)?;
    println!("[OK] {replica} serves its shard now (topology epoch {epoch}).");
    Ok(())
}

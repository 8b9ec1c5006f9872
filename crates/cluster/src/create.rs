//! `keel-cluster create HOST:PORT ... [--replicas N]`: forms a cluster of
//! new nodes. The first nodes given become primaries and share the 16384
//! slots evenly, in order, as `redis-cli --cluster create` shares them;
//! each of the others replicates a primary, in turn. Every node gets the
//! same topology, pushed at one epoch past theirs.

use keel_topology::{Node, Role, Topology, SLOTS};

use crate::client::Conn;
use crate::cluster::view_of;

/// The `(first, last)` slot ranges that share all slots evenly over
/// `primaries` nodes, as redis-cli computes them.
pub fn even_ranges(primaries: usize) -> Vec<(u16, u16)> {
    let per_node = SLOTS as f64 / primaries as f64;
    let mut first = 0usize;
    let mut cursor = 0f64;
    (0..primaries)
        .map(|i| {
            let mut last = (cursor + per_node - 1.0).round() as usize;
            if last > SLOTS - 1 || i == primaries - 1 {
                last = SLOTS - 1;
            }
            let range = (first as u16, last as u16);
            first = last + 1;
            cursor += per_node;
            range
        })
        .collect()
}

/// A new node at `address`: its connection and its own line, after
/// checking it is empty and knows no other node.
pub fn new_node(address: &str) -> Result<(Conn, Node), String> {
    let mut conn = Conn::open(address)?;
    let (view, id) = view_of(&mut conn)
        .map_err(|e| format!("{e} (is {address} a keel node with cluster-enabled yes?)"))?;
    let keys = conn.integer(&["DBSIZE"])?;
    if view.nodes.len() != 1 || view.assigned_slots() != 0 || keys != 0 {
        return Err(format!(
            "Node {address} is not empty. Either the node already knows other nodes (check with CLUSTER NODES) or contains some key in database 0."
        ));
    }
    let (host, port) = address
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        .ok_or_else(|| format!("{address}: expected host:port"))?;
    let own = view.node(&id).expect("a view lists its node");
    let mut node = Node::new(&id, host, port, own.bus_port);
    node.hostname = own.hostname.clone();
    Ok((conn, node))
}

pub fn create(addresses: &[String], replicas: usize) -> Result<(), String> {
    let primaries = addresses.len() / (replicas + 1);
    if primaries < 1 || addresses.len() < primaries * (replicas + 1) {
        return Err(format!(
            "{} nodes cannot make a cluster with {replicas} replicas per primary",
            addresses.len()
        ));
    }
    let mut conns = Vec::new();
    let mut topology = Topology::default();
    for address in addresses {
        let (conn, node) = new_node(address)?;
        conns.push(conn);
        topology.nodes.push(node);
    }
    println!(
        ">>> Performing hash slots allocation on {} nodes...",
        addresses.len()
    );
    for (i, (first, last)) in even_ranges(primaries).into_iter().enumerate() {
        let node = &mut topology.nodes[i];
        node.set_slots(first..=last);
        node.config_epoch = i as u64 + 1;
        println!("Master[{i}] -> Slots {first} - {last} ({})", node.address());
    }
    for i in primaries..topology.nodes.len() {
        let primary = (i - primaries) % primaries;
        let (id, epoch) = (
            topology.nodes[primary].id.clone(),
            topology.nodes[primary].config_epoch,
        );
        let replica = &mut topology.nodes[i];
        replica.role = Role::Replica(id);
        replica.config_epoch = epoch;
        println!(
            "Adding replica {} to {}",
            replica.address(),
            topology.nodes[primary].address()
        );
    }
    topology.current_epoch = primaries as u64;
    let epoch = topology.current_epoch.to_string();
    let text = topology.render(None, |_| (0, 0, true));
    println!(
        ">>> Pushing the topology (epoch {epoch}) to {} nodes",
        conns.len()
    );
    for conn in &mut conns {
        conn.call(&["CLUSTER", "SETTOPOLOGY", epoch.as_str(), text.as_str()])?;
    }
    println!("[OK] All {SLOTS} slots covered.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_shared_as_redis_cli_shares_them() {
        assert_eq!(
            even_ranges(3),
            vec![(0, 5460), (5461, 10922), (10923, 16383)]
        );
        assert_eq!(even_ranges(1), vec![(0, 16383)]);
        let five = even_ranges(5);
        assert_eq!(five.first().unwrap().0, 0);
        assert_eq!(five.last().unwrap().1, 16383);
        assert!(five.windows(2).all(|w| w[0].1 + 1 == w[1].0));
    }
}

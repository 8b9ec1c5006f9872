//! `keel-cluster reshard` and `rebalance`: move slots between primaries
//! while clients keep working, with Redis's protocol for it (the same
//! steps as `redis-cli --cluster reshard`):
//!
//! 1. the target marks the slot importing, the source migrating. From
//!    here a client asking the source for a key already moved gets `-ASK`
//!    and follows it to the target (with ASKING), so writes to moved keys
//!    land on the target and writes to keys not yet moved on the source;
//! 2. the keys move in batches with MIGRATE, which deletes each key on the
//!    source only after the target stored it, so no acknowledged write is
//!    lost and no key is served by both;
//! 3. every primary is told the new owner (target first, so it serves the
//!    slot without ASKING before the source starts sending `-MOVED`).
//!
//! A key that expires or is evicted during the move is simply not moved
//! (MIGRATE skips missing keys); one written meanwhile moves in the next
//! batch. At the end the topology is pushed at a new epoch, so every node
//! records the same version.

use std::time::Instant;

use keel_resp::Frame;
use keel_topology::{Node, SLOTS};

use crate::cluster::Cluster;

/// Keys per MIGRATE.
const BATCH: usize = 100;
/// MIGRATE's timeout, in milliseconds.
const MIGRATE_TIMEOUT_MS: &str = "60000";

/// Moves `slot` from `source` to `target` (node ids); returns the keys
/// moved.
pub fn move_slot(
    cluster: &mut Cluster,
    slot: u16,
    source: &str,
    target: &str,
) -> Result<usize, String> {
    let slot_text = slot.to_string();
    let slot_arg = slot_text.as_str();
    let target_address = cluster.member(target)?.address.clone();
    let (host, port) = target_address
        .rsplit_once(':')
        .ok_or_else(|| format!("bad address {target_address}"))?;
    (cluster.member(target)?.conn()?).call(&[
        "CLUSTER",
        "SETSLOT",
        slot_arg,
        "IMPORTING",
        source,
    ])?;
    (cluster.member(source)?.conn()?).call(&[
        "CLUSTER",
        "SETSLOT",
        slot_arg,
        "MIGRATING",
        target,
    ])?;
    let mut moved = 0;
    loop {
        let conn = cluster.member(source)?.conn()?;
        let batch = BATCH.to_string();
        let keys = match conn.call(&["CLUSTER", "GETKEYSINSLOT", slot_arg, batch.as_str()])? {
            Frame::Array(keys) => keys,
            other => return Err(format!("GETKEYSINSLOT replied {other:?}")),
        };
        if keys.is_empty() {
            break;
        }
        let mut migrate: Vec<Vec<u8>> =
            ["MIGRATE", host, port, "", "0", MIGRATE_TIMEOUT_MS, "KEYS"]
                .iter()
                .map(|a| a.as_bytes().to_vec())
                .collect();
        for key in &keys {
            match key {
                Frame::Bulk(key) => migrate.push(key.to_vec()),
                other => return Err(format!("GETKEYSINSLOT listed {other:?}")),
            }
        }
        conn.call(&migrate)?;
        moved += keys.len();
    }
    let mut order = vec![target.to_string(), source.to_string()];
    for member in &cluster.members {
        let primary = member.itself().is_some_and(Node::is_primary);
        if primary && !order.contains(&member.id) {
            order.push(member.id.clone());
        }
    }
    for id in order {
        let member = cluster.member(&id)?;
        if member.conn.is_some() {
            member
                .conn()?
                .call(&["CLUSTER", "SETSLOT", slot_arg, "NODE", target])?;
        }
    }
    Ok(moved)
}

/// Moves each of `moves` (slot, source, target), printing progress, then
/// pushes the resulting topology to every node.
pub fn run_moves(entry: &str, moves: &[(u16, String, String)]) -> Result<(), String> {
    let mut cluster = Cluster::load(entry)?;
    let started = Instant::now();
    let mut keys = 0;
    for (done, (slot, source, target)) in moves.iter().enumerate() {
        keys += move_slot(&mut cluster, *slot, source, target)?;
        let done = done + 1;
        if done == moves.len() || done % 64 == 0 {
            println!(
                "Moved {done}/{} slots ({keys} keys) in {:.1}s",
                moves.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    let mut cluster = Cluster::load(entry)?;
    let mut topology = cluster.topology();
    let epoch = cluster.push(&mut topology, None)?;
    println!(
        "[OK] Moved {} slots and {keys} keys; topology epoch {epoch}",
        moves.len()
    );
    Ok(())
}

/// `reshard --from SOURCE --to TARGET --slots N`: the source's first `n`
/// slots.
pub fn reshard(entry: &str, source: &str, target: &str, n: usize) -> Result<(), String> {
    let cluster = Cluster::load(entry)?;
    let topology = cluster.topology();
    let from = topology.node(source).ok_or(format!("no node {source}"))?;
    let to = topology.node(target).ok_or(format!("no node {target}"))?;
    if !from.is_primary() || !to.is_primary() {
        return Err("slots move between primaries only".into());
    }
    if n > from.slot_count() {
        return Err(format!(
            "{source} serves {} slots, fewer than {n}",
            from.slot_count()
        ));
    }
    let moves: Vec<(u16, String, String)> = (from.served().take(n))
        .map(|slot| (slot, source.to_string(), target.to_string()))
        .collect();
    println!(
        "Moving {n} slots from {} to {}",
        from.address(),
        to.address()
    );
    run_moves(entry, &moves)
}

/// `rebalance`: every primary (empty ones included) ends with its even
/// share of the slots, the first primaries taking one more when they do
/// not divide evenly.
pub fn rebalance(entry: &str) -> Result<(), String> {
    let cluster = Cluster::load(entry)?;
    let topology = cluster.topology();
    let primaries: Vec<&Node> = topology.nodes.iter().filter(|n| n.is_primary()).collect();
    let count = primaries.len();
    let share = |i: usize| SLOTS / count + usize::from(i < SLOTS % count);
    let mut givers: Vec<(String, Vec<u16>)> = Vec::new();
    let mut takers: Vec<(String, usize)> = Vec::new();
    for (i, node) in primaries.iter().enumerate() {
        let (has, wants) = (node.slot_count(), share(i));
        if has > wants {
            givers.push((node.id.clone(), node.served().skip(wants).collect()));
        } else if has < wants {
            takers.push((node.id.clone(), wants - has));
        }
    }
    let mut moves = Vec::new();
    let mut spare = givers
        .iter()
        .flat_map(|(id, slots)| slots.iter().map(move |&s| (s, id.clone())));
    for (taker, wanted) in takers {
        for (slot, giver) in spare.by_ref().take(wanted) {
            moves.push((slot, giver, taker.clone()));
        }
    }
    if moves.is_empty() {
        println!("[OK] The slots are already balanced over {count} primaries.");
        return Ok(());
    }
    println!("Rebalancing {} slots over {count} primaries", moves.len());
    run_moves(entry, &moves)
}

//! CLUSTER ADDSLOTS | ADDSLOTSRANGE | DELSLOTS | DELSLOTSRANGE |
//! FLUSHSLOTS — assign slots to this node, or unassign them, in this
//! node's view only (as in Redis; keel has no bus to spread them, so a
//! control plane tells every node).

use bytes::Bytes;

use super::ADMIN;
use crate::cmd::context::cluster::{
    apply_view, cluster, refused, slot_arg, Topology, NO_OWNER, SLOTS,
};
use crate::cmd::context::{wrong_arity, Ctx, Error, Spec};

pub const ADDSLOTS: Spec = Spec {
    name: "cluster|addslots",
    arity: -3,
    summary: "Assign new hash slots to receiving node",
    complexity: "O(N) where N is the total number of hash slot arguments",
    run: |ctx, args| change_slots(ctx, args, Change::Add, false),
    ..ADMIN
};

pub const ADDSLOTSRANGE: Spec = Spec {
    name: "cluster|addslotsrange",
    arity: -4,
    summary: "Assign new hash slots to receiving node",
    since: "7.0.0",
    complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
    run: |ctx, args| change_slots(ctx, args, Change::Add, true),
    ..ADMIN
};

pub const DELSLOTS: Spec = Spec {
    name: "cluster|delslots",
    arity: -3,
    summary: "Set hash slots as unbound in receiving node",
    complexity: "O(N) where N is the total number of hash slot arguments",
    run: |ctx, args| change_slots(ctx, args, Change::Delete, false),
    ..ADMIN
};

pub const DELSLOTSRANGE: Spec = Spec {
    name: "cluster|delslotsrange",
    arity: -4,
    summary: "Set hash slots as unbound in receiving node",
    since: "7.0.0",
    complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
    run: |ctx, args| change_slots(ctx, args, Change::Delete, true),
    ..ADMIN
};

pub const FLUSHSLOTS: Spec = Spec {
    name: "cluster|flushslots",
    arity: 2,
    summary: "Delete a node's own slots information",
    run: flush_slots,
    ..ADMIN
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    Add,
    Delete,
}

/// The slots the arguments name: each one, or each `first last` range.
fn slots_named(spec_name: &'static str, args: &[Bytes], ranges: bool) -> Result<Vec<u16>, Error> {
    let args = &args[2..];
    if !ranges {
        return args.iter().map(slot_arg).collect();
    }
    if !args.len().is_multiple_of(2) {
        return Err(wrong_arity(spec_name));
    }
    let mut slots = Vec::new();
    for pair in args.chunks(2) {
        let (first, last) = (slot_arg(&pair[0])?, slot_arg(&pair[1])?);
        if first > last {
            return Err(format!(
                "ERR start slot number {first} is greater than end slot number {last}"
            )
            .into());
        }
        slots.extend(first..=last);
    }
    Ok(slots)
}

fn change_slots(ctx: &mut Ctx, args: &[Bytes], change: Change, ranges: bool) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let name = match change {
        Change::Add => "cluster|addslotsrange",
        Change::Delete => "cluster|delslotsrange",
    };
    let slots = slots_named(name, args, ranges)?;
    cluster
        .change(|topology, myself| apply(topology, myself, &slots, change))
        .map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}

/// Adds `slots` to this node or takes them from whoever serves them, all
/// or none, with Redis's checks in Redis's order.
fn apply(
    topology: &mut Topology,
    myself: &str,
    slots: &[u16],
    change: Change,
) -> Result<(), String> {
    let owners = topology.owners()?;
    let mut named = vec![false; SLOTS];
    for &slot in slots {
        let owned = owners[slot as usize] != NO_OWNER;
        match change {
            Change::Delete if !owned => return Err(format!("Slot {slot} is already unassigned")),
            Change::Add if owned => return Err(format!("Slot {slot} is already busy")),
            _ => {}
        }
        if std::mem::replace(&mut named[slot as usize], true) {
            return Err(format!("Slot {slot} specified multiple times"));
        }
    }
    for node in &mut topology.nodes {
        let is_me = node.id == myself;
        let kept = node.served().filter(|&s| !named[s as usize]);
        let added = slots
            .iter()
            .copied()
            .filter(|_| is_me && change == Change::Add);
        let mut served: Vec<u16> = kept.chain(added).collect();
        served.sort_unstable();
        node.set_slots(served);
        if is_me && change == Change::Add {
            node.importing.retain(|slot, _| !named[*slot as usize]);
        }
    }
    Ok(())
}

fn flush_slots(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    if ctx.server.store.db(0, ctx.now_ms).stats().keys != 0 {
        return Err("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.".into());
    }
    cluster
        .change(|topology, myself| {
            let me = topology.node_mut(myself).expect("the view lists this node");
            me.slots.clear();
            Ok(())
        })
        .map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}

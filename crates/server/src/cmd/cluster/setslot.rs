//! CLUSTER SETSLOT slot IMPORTING node-id | MIGRATING node-id | STABLE |
//! NODE node-id — the steps of moving a slot between nodes, as Redis's
//! `redis-cli --cluster reshard` and `keel-cluster reshard` drive them:
//! the target imports, the source migrates (so clients are sent on with
//! `-ASK` for keys already moved), the keys move with MIGRATE, then every
//! node is told the new owner.

use bytes::Bytes;

use super::ADMIN;
use crate::cmd::context::cluster::{
    apply_view, bump_epoch, cluster, refused, slot_arg, Node, Topology, NO_OWNER,
};
use crate::cmd::context::{is, Ctx, Error, Spec};

pub const SETSLOT: Spec = Spec {
    name: "cluster|setslot",
    arity: -4,
    summary: "Bind a hash slot to a specific node",
    run: setslot,
    ..ADMIN
};

enum Action {
    Importing(String),
    Migrating(String),
    Stable,
    Node(String),
}

fn setslot(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    if !cluster.view().me().is_primary() {
        return Err("ERR Please use SETSLOT only with masters.".into());
    }
    let slot = slot_arg(&args[2])?;
    let node_arg = || String::from_utf8_lossy(&args[4]).into_owned();
    let action = match args.len() {
        5 if is(&args[3], "importing") => Action::Importing(node_arg()),
        5 if is(&args[3], "migrating") => Action::Migrating(node_arg()),
        5 if is(&args[3], "node") => Action::Node(node_arg()),
        4 if is(&args[3], "stable") => Action::Stable,
        _ => {
            return Err(
                "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"
                    .into(),
            )
        }
    };
    let keys_here = ctx.server.store.db(0, ctx.now_ms).keys_in_slot(slot);
    cluster
        .change(|topology, myself| apply(topology, myself, slot, action, keys_here))
        .map_err(refused)?;
    apply_view(ctx.server);
    ctx.w().ok();
    Ok(())
}

fn apply(
    topology: &mut Topology,
    myself: &str,
    slot: u16,
    action: Action,
    keys_here: usize,
) -> Result<(), String> {
    let owners = topology.owners()?;
    let owner = (owners[slot as usize] != NO_OWNER)
        .then(|| topology.nodes[owners[slot as usize] as usize].id.clone());
    let mine = owner.as_deref() == Some(myself);
    let primary_named = |topology: &Topology, id: &str, unknown: &str| match topology.node(id) {
        None => Err(format!("{unknown} {id}")),
        Some(node) if !node.is_primary() => Err("Target node is not a master".to_string()),
        Some(_) => Ok(()),
    };
    match action {
        Action::Migrating(target) => {
            if !mine {
                return Err(format!("I'm not the owner of hash slot {slot}"));
            }
            primary_named(topology, &target, "I don't know about node")?;
            me(topology, myself).migrating.insert(slot, target);
        }
        Action::Importing(source) => {
            if mine {
                return Err(format!("I'm already the owner of hash slot {slot}"));
            }
            primary_named(topology, &source, "I don't know about node")?;
            me(topology, myself).importing.insert(slot, source);
        }
        Action::Stable => {
            let me = me(topology, myself);
            me.migrating.remove(&slot);
            me.importing.remove(&slot);
        }
        Action::Node(new_owner) => {
            primary_named(topology, &new_owner, "Unknown node")?;
            if mine && new_owner != myself && keys_here != 0 {
                return Err(format!(
                    "Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
                ));
            }
            if keys_here == 0 {
                me(topology, myself).migrating.remove(&slot);
            }
            for node in &mut topology.nodes {
                let served: Vec<u16> = node.served().filter(|&s| s != slot).collect();
                node.set_slots(served);
            }
            let taker = topology.node_mut(&new_owner).expect("checked above");
            let mut served: Vec<u16> = taker.served().chain([slot]).collect();
            served.sort_unstable();
            taker.set_slots(served);
            // A slot imported by hand gives this node a new config epoch,
            // as Redis bumps it without consensus.
            if new_owner == myself && me(topology, myself).importing.remove(&slot).is_some() {
                bump_epoch(topology, myself);
            }
        }
    }
    Ok(())
}

fn me<'t>(topology: &'t mut Topology, myself: &str) -> &'t mut Node {
    topology.node_mut(myself).expect("the view lists this node")
}

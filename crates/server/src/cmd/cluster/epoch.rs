//! CLUSTER SET-CONFIG-EPOCH | BUMPEPOCH | SAVECONFIG — this node's config
//! epoch, and writing its view to `cluster-config-file` on demand (every
//! change is written anyway before it is answered).

use bytes::Bytes;

use super::ADMIN;
use crate::cmd::context::cluster::{bump_epoch, cluster, refused};
use crate::cmd::context::{parse_i64, Ctx, Error, Spec};

pub const SET_CONFIG_EPOCH: Spec = Spec {
    name: "cluster|set-config-epoch",
    arity: 3,
    summary: "Set the configuration epoch in a new node",
    run: set_config_epoch,
    ..ADMIN
};

pub const BUMPEPOCH: Spec = Spec {
    name: "cluster|bumpepoch",
    arity: 2,
    summary: "Advance the cluster config epoch",
    run: bumpepoch,
    ..ADMIN
};

pub const SAVECONFIG: Spec = Spec {
    name: "cluster|saveconfig",
    arity: 2,
    summary: "Forces the node to save cluster state on disk",
    run: |ctx, _| {
        cluster(ctx)?
            .save_now()
            .map_err(|e| format!("ERR error saving the cluster node config: {e}"))?;
        ctx.w().ok();
        Ok(())
    },
    ..ADMIN
};

fn set_config_epoch(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let epoch = parse_i64(&args[2])?;
    if epoch < 0 {
        return Err(format!("ERR Invalid config epoch specified: {epoch}").into());
    }
    cluster
        .change(|topology, myself| {
            if topology.nodes.len() > 1 {
                return Err("The user can assign a config epoch only when the node does not know any other node.".into());
            }
            let me = topology.node_mut(myself).expect("the view lists this node");
            if me.config_epoch != 0 {
                return Err("Node config epoch is already non-zero".into());
            }
            me.config_epoch = epoch as u64;
            topology.current_epoch = topology.current_epoch.max(epoch as u64);
            Ok(())
        })
        .map_err(refused)?;
    ctx.w().ok();
    Ok(())
}

fn bumpepoch(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    let cluster = cluster(ctx)?;
    let (bumped, epoch) = cluster
        .change(|topology, myself| {
            let bumped = bump_epoch(topology, myself);
            Ok((bumped, topology.node(myself).map_or(0, |n| n.config_epoch)))
        })
        .map_err(refused)?;
    let word = if bumped { "BUMPED" } else { "STILL" };
    ctx.w().simple(&format!("{word} {epoch}"));
    Ok(())
}

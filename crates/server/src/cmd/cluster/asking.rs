//! ASKING, READONLY, READWRITE — a cluster client's flags for its next
//! command (ASKING: after `-ASK`, the slot being imported is served) and
//! for its connection (READONLY: a replica serves reads of its primary's
//! slots instead of redirecting them).

use bytes::Bytes;

use crate::cmd::context::cluster::cluster;
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// ASKING.
pub const ASKING: Spec = Spec {
    name: "asking",
    arity: 1,
    flags: &["fast"],
    acl: &["@fast", "@connection"],
    group: "cluster",
    summary: "Sent by cluster clients after an -ASK redirect",
    since: "3.0.0",
    run: asking,
    ..BASE
};

/// READONLY.
pub const READONLY: Spec = Spec {
    name: "readonly",
    arity: 1,
    flags: &["loading", "stale", "fast"],
    acl: &["@fast", "@connection"],
    group: "cluster",
    summary: "Enables read queries for a connection to a cluster replica node",
    since: "3.0.0",
    run: |ctx, _| set_readonly(ctx, true),
    ..BASE
};

/// READWRITE.
pub const READWRITE: Spec = Spec {
    name: "readwrite",
    summary: "Disables read queries for a connection to a cluster replica node",
    run: |ctx, _| set_readonly(ctx, false),
    ..READONLY
};

fn asking(ctx: &mut Ctx, _: &[Bytes]) -> Result<(), Error> {
    cluster(ctx)?;
    ctx.client.cluster.asking = true;
    ctx.w().ok();
    Ok(())
}

fn set_readonly(ctx: &mut Ctx, readonly: bool) -> Result<(), Error> {
    cluster(ctx)?;
    ctx.client.cluster.readonly = readonly;
    ctx.w().ok();
    Ok(())
}

//! WAIT numreplicas timeout — blocks until the writes sent so far reach
//! `numreplicas` replicas, or `timeout` milliseconds pass (0: no timeout),
//! and replies how many replicas acknowledged them. The replicas are asked
//! for an acknowledgement at once (`REPLCONF GETACK *` in the stream)
//! rather than at their next periodic one. Inside a transaction it replies
//! at once, as Redis does.

use bytes::Bytes;

use crate::client::{AfterReply, WaitReplicas};
use crate::cmd::context::{parse_i64, Ctx, Error, Spec, BASE};

/// WAIT.
pub const SPEC: Spec = Spec {
    name: "wait",
    arity: 3,
    flags: &["noscript"],
    acl: &["@slow", "@connection"],
    group: "generic",
    summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
    since: "3.0.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let replication = &ctx.server.replication;
    if replication.is_replica() {
        return Err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.".into());
    }
    let needed = parse_i64(&args[1])?;
    let timeout = parse_i64(&args[2])
        .map_err(|_| Error::from("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err("ERR timeout is negative".into());
    }
    let backlog = &replication.backlog;
    let offset = replication.master_offset();
    let acknowledged = backlog.acknowledged_by(offset);
    if ctx.client.tx.executing || acknowledged as i64 >= needed || !backlog.active() {
        ctx.w().integer(acknowledged as i64);
        return Ok(());
    }
    let getack = [
        Bytes::from_static(b"REPLCONF"),
        Bytes::from_static(b"GETACK"),
        Bytes::from_static(b"*"),
    ];
    backlog.record([(None, &getack[..])]);
    let deadline = (timeout > 0)
        .then(|| tokio::time::Instant::now() + std::time::Duration::from_millis(timeout as u64));
    ctx.client.after_reply = Some(AfterReply::WaitReplicas(WaitReplicas {
        needed: needed as usize,
        offset,
        deadline,
    }));
    Ok(())
}

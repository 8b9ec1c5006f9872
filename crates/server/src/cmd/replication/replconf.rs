//! REPLCONF option value [option value ...] — what a replica (or
//! `redis-cli --rdb`) tells its primary before SYNC or PSYNC: the port it
//! listens on, its capabilities (`eof`: it reads a diskless payload), and
//! whether it wants the snapshot only (`rdb-only`). ACK and GETACK, which
//! flow once a replica streams, get no reply, as in Redis.

use bytes::Bytes;

use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE};

/// REPLCONF.
pub const SPEC: Spec = Spec {
    name: "replconf",
    arity: -1,
    flags: &["admin", "noscript", "loading", "stale", "allow_busy"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "An internal command for configuring the replication stream",
    since: "3.0.0",
    complexity: "O(1)",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if args.len().is_multiple_of(2) {
        return Err(errors::SYNTAX.into());
    }
    const OUT_OF_RANGE: &str = "ERR value is not an integer or out of range";
    for pair in args[1..].chunks_exact(2) {
        let (option, value) = (&pair[0], &pair[1]);
        let handshake = &mut ctx.client.replica_handshake;
        match String::from_utf8_lossy(option)
            .to_ascii_lowercase()
            .as_str()
        {
            "listening-port" => {
                handshake.listening_port = Some(parse_i64(value)?);
            }
            "capa" => {
                handshake.capa_eof |= is(value, "eof");
                handshake.capa_psync2 |= is(value, "psync2");
            }
            "rdb-only" => {
                handshake.rdb_only = match parse_i64(value).ok() {
                    Some(0) => false,
                    Some(1) => true,
                    Some(_) => {
                        return Err("ERR value is out of range, value must between 0 and 1".into())
                    }
                    None => return Err(OUT_OF_RANGE.into()),
                }
            }
            "ip-address" => {
                handshake.ip_address = Some(String::from_utf8_lossy(value).into_owned());
            }
            "rdb-filter-only" => {}
            "ack" | "getack" => return Ok(()),
            _ => {
                let option = String::from_utf8_lossy(option);
                return Err(format!("ERR Unrecognized REPLCONF option: {option}").into());
            }
        }
    }
    ctx.w().ok();
    Ok(())
}

//! HELLO [protover [AUTH username password] [SETNAME name]] — switch
//! protocol, optionally authenticate and name the connection, and describe
//! the server.

use bytes::Bytes;
use keel_resp::Protocol;

use crate::cmd::context::REDIS_COMPAT_VERSION;
use crate::cmd::context::{is, Ctx, Error, Spec, BASE};

/// HELLO.
pub const SPEC: Spec = Spec {
    name: "hello",
    arity: -1,
    flags: &[
        "noscript",
        "loading",
        "stale",
        "fast",
        "no_auth",
        "allow_busy",
    ],
    acl: &["@fast", "@connection"],
    group: "connection",
    summary: "Handshake with Redis",
    since: "6.0.0",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let mut protocol = None;
    let mut j = 1;
    if let Some(version) = args.get(1) {
        let v = keel_store::parse_canonical_i64(version).ok_or(Error::from(
            "ERR Protocol version is not an integer or out of range",
        ))?;
        protocol = Some(match v {
            2 => Protocol::Resp2,
            3 => Protocol::Resp3,
            _ => return Err("NOPROTO unsupported protocol version".into()),
        });
        j = 2;
    }
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "auth") && more >= 2 {
            ctx.redact(j + 1);
            ctx.redact(j + 2);
            let (user, password) = (&args[j + 1], &args[j + 2]);
            crate::cmd::context::connection::authenticate(ctx, &args[0], user, password)?;
            j += 3;
        } else if is(&args[j], "setname") && more >= 1 {
            crate::cmd::context::connection::set_name(ctx, &args[j + 1])?;
            j += 2;
        } else {
            return Err(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[j])
            )
            .into());
        }
    }
    if ctx.client.acl.needs_auth() {
        return Err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH \
                    <user> <pass> option can be used to authenticate the client and select the RESP protocol \
                    version at the same time"
            .into());
    }
    if let Some(p) = protocol {
        ctx.client.protocol = p;
        ctx.client.handle.set_protocol(p);
    }
    let id = ctx.client.handle.id;
    let proto = if ctx.client.protocol == Protocol::Resp3 {
        3
    } else {
        2
    };
    let mut w = ctx.w();
    w.map(7);
    w.bulk(b"server");
    w.bulk(b"redis");
    w.bulk(b"version");
    w.bulk(REDIS_COMPAT_VERSION.as_bytes());
    w.bulk(b"proto");
    w.integer(proto);
    w.bulk(b"id");
    w.integer(id as i64);
    w.bulk(b"mode");
    w.bulk(b"standalone");
    w.bulk(b"role");
    w.bulk(b"master");
    w.bulk(b"modules");
    w.array(0);
    Ok(())
}

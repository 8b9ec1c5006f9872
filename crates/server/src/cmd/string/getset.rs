//! GETSET key value — SET key value GET, the older spelling.

use bytes::Bytes;

use crate::cmd::context::strings::{apply, Options, Ttl};
use crate::cmd::context::{Ctx, Error, Spec, BASE};

/// GETSET.
pub const SPEC: Spec = Spec {
    name: "getset",
    arity: 3,
    flags: &["write", "denyoom", "fast"],
    keys: (1, 1, 1),
    acl: &["@write", "@string", "@fast"],
    group: "string",
    summary: "Set the string value of a key and return its old value",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let options = Options {
        nx: false,
        xx: false,
        get: true,
        ttl: Ttl::Default,
    };
    apply(ctx, &args[1], &args[2], options, None).map(|_| ())
}

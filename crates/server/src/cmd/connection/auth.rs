//! AUTH [username] password — authenticate the connection.
//!
//! The one-argument form logs in as "default", whose password
//! `requirepass` sets; while "default" needs no password (`nopass`) that
//! form is refused with a hint, as in Redis.

use bytes::Bytes;

use crate::cmd::context::connection::authenticate;
use crate::cmd::context::{errors, Ctx, Error, Spec, BASE};

/// AUTH.
pub const SPEC: Spec = Spec {
    name: "auth",
    arity: -2,
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
    summary: "Authenticate to the server",
    complexity: "O(N) where N is the number of passwords defined for the user",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if args.len() <= 3 {
        (1..args.len()).for_each(|i| ctx.redact(i));
    }
    let (user, password): (&[u8], &[u8]) = match args {
        [_, password] => {
            if ctx.server.acl.users().default_user().nopass() {
                return Err("ERR AUTH <password> called without any password configured for the default user. \
                            Are you sure your configuration is correct?"
                    .into());
            }
            (b"default", password)
        }
        [_, user, password] => (user, password),
        _ => return Err(errors::SYNTAX.into()),
    };
    authenticate(ctx, &args[0], user, password)?;
    ctx.w().ok();
    Ok(())
}

//! AUTH [username] password — authenticate the connection.
//!
//! keel has one user, "default", whose password is `requirepass`. With no
//! password configured, Redis's default user is "nopass": the two-argument
//! form is refused with a hint, the three-argument form for "default"
//! succeeds with any password.

use bytes::Bytes;

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
    summary: "Authenticates the connection.",
    complexity: "O(N) where N is the number of passwords defined for the user",
    run,
    ..BASE
};

/// The error for a wrong user or password.
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    if args.len() <= 3 {
        (1..args.len()).for_each(|i| ctx.redact(i));
    }
    let (user, password): (&[u8], &[u8]) = match args {
        [_, password] => {
            if ctx.server.config.read().requirepass.is_empty() {
                return Err("ERR AUTH <password> called without any password configured for the default user. \
                            Are you sure your configuration is correct?"
                    .into());
            }
            (b"default", password)
        }
        [_, user, password] => (user, password),
        _ => return Err(errors::SYNTAX.into()),
    };
    authenticate(ctx, user, password)?;
    ctx.w().ok();
    Ok(())
}

/// Checks a user and password (AUTH, HELLO AUTH) and marks the connection
/// authenticated on success.
pub fn authenticate(ctx: &mut Ctx, user: &[u8], password: &[u8]) -> Result<(), Error> {
    let required = ctx.server.config.read().requirepass.clone();
    let ok = user == b"default" && (required.is_empty() || required.as_bytes() == password);
    if !ok {
        return Err(WRONGPASS.into());
    }
    ctx.client.authenticated = true;
    Ok(())
}

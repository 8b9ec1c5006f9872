//! What AUTH, CLIENT and HELLO share: authenticating and naming the
//! connection.

use std::sync::atomic::Ordering;

use keel_acl::Reason;

use super::acl::{context_of, Caller};
use super::{Ctx, Error};

/// The error for a wrong user or password.
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// Checks a user and password (AUTH, HELLO AUTH) and logs the connection
/// in as that user on success; a failure is counted and goes to the ACL
/// log under `command`, the name the client sent.
pub fn authenticate(
    ctx: &mut Ctx,
    command: &[u8],
    user: &[u8],
    password: &[u8],
) -> Result<(), Error> {
    let accepted = ctx
        .server
        .acl
        .users()
        .get(user)
        .is_some_and(|u| u.accepts(password));
    if !accepted {
        ctx.server.acl.denied.auth.fetch_add(1, Ordering::Relaxed);
        Caller::of(ctx).log(
            Reason::Auth,
            context_of(ctx),
            command.to_vec(),
            user.to_vec(),
        );
        return Err(WRONGPASS.into());
    }
    ctx.client.acl.log_in(&ctx.server.acl, user);
    ctx.client.handle.set_user(user);
    Ok(())
}

/// Sets the connection name (CLIENT SETNAME, HELLO SETNAME): printable
/// ASCII without spaces, or empty to clear it.
pub fn set_name(ctx: &mut Ctx, name: &[u8]) -> Result<(), Error> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(
            "ERR Client names cannot contain spaces, newlines or special characters.".into(),
        );
    }
    ctx.client
        .handle
        .set_name(String::from_utf8_lossy(name).into_owned());
    Ok(())
}

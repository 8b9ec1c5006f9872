//! What AUTH, CLIENT and HELLO share: authenticating and naming the
//! connection.

use super::{Ctx, Error};

/// The error for a wrong user or password.
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

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

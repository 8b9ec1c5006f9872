//! FCALL function numkeys [key ...] [arg ...] and FCALL_RO — call a
//! function a library registered, over the keys it declares and its
//! arguments. FCALL_RO refuses functions that may write.

use bytes::Bytes;

use crate::cmd::context::scripting::script_call;
use crate::cmd::context::{Ctx, Error, Spec};

/// Redis documents both forms' cost alike.
const COMPLEXITY: &str = "Depends on the function that is executed.";

/// FCALL.
pub const FCALL: Spec = script_call(
    "fcall",
    "Invoke a function",
    "7.0.0",
    COMPLEXITY,
    false,
    |ctx, args| fcall(ctx, args, false),
);
/// FCALL_RO.
pub const FCALL_RO: Spec = script_call(
    "fcall_ro",
    "Invoke a read-only function",
    "7.0.0",
    COMPLEXITY,
    true,
    |ctx, args| fcall(ctx, args, true),
);

fn fcall(ctx: &mut Ctx, args: &[Bytes], read_only: bool) -> Result<(), Error> {
    let command = args.to_vec();
    ctx.script_job(move |session| session.fcall(&command, read_only));
    Ok(())
}

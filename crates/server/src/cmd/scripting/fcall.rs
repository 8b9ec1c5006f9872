//! FCALL function numkeys [key ...] [arg ...] and FCALL_RO — call a
//! function a library registered, over the keys it declares and its
//! arguments. FCALL_RO refuses functions that may write.

use bytes::Bytes;

use crate::cmd::context::{keys, Ctx, Error, Spec, BASE};

const fn spec(name: &'static str, summary: &'static str, read_only: bool, run: crate::cmd::context::Handler) -> Spec {
    Spec {
        name,
        arity: -3,
        flags: if read_only {
            &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"]
        } else {
            &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"]
        },
        acl: &["@slow", "@scripting"],
        group: "scripting",
        summary,
        since: "7.0.0",
        complexity: "Depends on the function that is executed.",
        run,
        getkeys: Some(keys::counted::<2>),
        ..BASE
    }
}

/// FCALL.
pub const FCALL: Spec = spec("fcall", "Invoke a function", false, |ctx, args| fcall(ctx, args, false));
/// FCALL_RO.
pub const FCALL_RO: Spec = spec("fcall_ro", "Invoke a read-only function", true, |ctx, args| {
    fcall(ctx, args, true)
});

fn fcall(ctx: &mut Ctx, args: &[Bytes], read_only: bool) -> Result<(), Error> {
    let command = args.to_vec();
    ctx.script_job(move |session| session.fcall(&command, read_only));
    Ok(())
}

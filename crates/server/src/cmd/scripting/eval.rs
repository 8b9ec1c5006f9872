//! EVAL script numkeys [key ...] [arg ...], EVALSHA sha1 numkeys ..., and
//! their read-only forms EVAL_RO and EVALSHA_RO — run a Lua script over
//! the keys it declares and its arguments. EVAL compiles a new body and
//! caches it by its SHA1; EVALSHA runs a cached script by that name, or
//! answers NOSCRIPT. The _RO forms refuse scripts that may write.

use bytes::Bytes;

use crate::cmd::context::scripting::Source;
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
        since: if read_only { "7.0.0" } else { "2.6.0" },
        complexity: "Depends on the script that is executed.",
        run,
        getkeys: Some(keys::counted::<2>),
        ..BASE
    }
}

/// EVAL.
pub const EVAL: Spec = spec("eval", "Execute a Lua script server side", false, |ctx, args| {
    eval(ctx, args, false, false)
});
/// EVALSHA.
pub const EVALSHA: Spec = spec("evalsha", "Execute a Lua script server side", false, |ctx, args| {
    eval(ctx, args, true, false)
});
/// EVAL_RO.
pub const EVAL_RO: Spec = spec(
    "eval_ro",
    "Execute a read-only Lua script server side",
    true,
    |ctx, args| eval(ctx, args, false, true),
);
/// EVALSHA_RO.
pub const EVALSHA_RO: Spec = spec(
    "evalsha_ro",
    "Execute a read-only Lua script server side",
    true,
    |ctx, args| eval(ctx, args, true, true),
);

fn eval(ctx: &mut Ctx, args: &[Bytes], by_sha: bool, read_only: bool) -> Result<(), Error> {
    let command = args.to_vec();
    let source = match by_sha {
        true => Source::Sha(args[1].clone()),
        false => Source::Body(args[1].clone()),
    };
    ctx.script_job(move |session| session.eval(&command, source, read_only));
    Ok(())
}

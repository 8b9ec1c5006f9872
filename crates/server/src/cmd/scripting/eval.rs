//! EVAL script numkeys [key ...] [arg ...], EVALSHA sha1 numkeys ..., and
//! their read-only forms EVAL_RO and EVALSHA_RO — run a Lua script over
//! the keys it declares and its arguments. EVAL compiles a new body and
//! caches it by its SHA1; EVALSHA runs a cached script by that name, or
//! answers NOSCRIPT. The _RO forms refuse scripts that may write.

use bytes::Bytes;

use crate::cmd::context::scripting::{script_call, Source};
use crate::cmd::context::{Ctx, Error, Handler, Spec};

/// Redis documents every form's cost alike.
const COMPLEXITY: &str = "Depends on the script that is executed.";

const fn spec(name: &'static str, summary: &'static str, read_only: bool, run: Handler) -> Spec {
    let since = if read_only { "7.0.0" } else { "2.6.0" };
    script_call(name, summary, since, COMPLEXITY, read_only, run)
}

/// EVAL.
pub const EVAL: Spec = spec(
    "eval",
    "Execute a Lua script server side",
    false,
    |ctx, args| eval(ctx, args, false, false),
);
/// EVALSHA.
pub const EVALSHA: Spec = spec(
    "evalsha",
    "Execute a Lua script server side",
    false,
    |ctx, args| eval(ctx, args, true, false),
);
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

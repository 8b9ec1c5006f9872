//! SCRIPT LOAD | EXISTS | FLUSH | KILL | DEBUG — the EVAL script cache
//! and the running script: load a body without running it, ask which
//! SHA1s are cached, empty the cache, stop a script that has not written.

use bytes::Bytes;

use crate::cmd::context::scripting::Kind;
use crate::cmd::context::{is, Spec, BASE, HELP};

/// SCRIPT (container).
pub const SPEC: Spec = Spec {
    name: "script",
    arity: -2,
    acl: &["@slow"],
    group: "scripting",
    summary: "A container for Lua scripts management commands",
    since: "2.6.0",
    complexity: "Depends on subcommand.",
    subcommands: &[&FLUSH, &DEBUG, &SCRIPT_HELP, &KILL, &LOAD, &EXISTS],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["noscript"],
    acl: &["@slow", "@scripting"],
    group: "scripting",
    since: "2.6.0",
    ..BASE
};

const LOAD: Spec = Spec {
    name: "script|load",
    arity: 3,
    flags: &["noscript", "stale"],
    summary: "Load the specified Lua script into the script cache.",
    complexity: "O(N) with N being the length in bytes of the script body.",
    run: |ctx, args| {
        let body = args[2].clone();
        ctx.script_job(move |session| {
            let loaded = session.engines().scripts.load(&body, false);
            match loaded {
                Ok((sha, _)) => session.w().bulk(sha.as_bytes()),
                Err(e) => session.w().error(&e),
            }
        });
        Ok(())
    },
    ..SUB
};

const EXISTS: Spec = Spec {
    name: "script|exists",
    arity: -3,
    summary: "Check existence of scripts in the script cache.",
    complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
    run: |ctx, args| {
        let shas: Vec<Bytes> = args[2..].to_vec();
        ctx.script_job(move |session| {
            let found: Vec<bool> = {
                let engines = session.engines();
                shas.iter().map(|sha| engines.scripts.exists(sha)).collect()
            };
            let mut w = session.w();
            w.array(found.len());
            found.iter().for_each(|&f| w.integer(f as i64));
        });
        Ok(())
    },
    ..SUB
};

const FLUSH: Spec = Spec {
    name: "script|flush",
    arity: -2,
    summary: "Remove all the scripts from the script cache.",
    complexity: "O(N) with N being the number of scripts in cache",
    run: |ctx, args| {
        match args {
            [_, _] => {}
            [_, _, mode] if is(mode, "sync") || is(mode, "async") => {}
            _ => return Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option".into()),
        }
        ctx.script_job(|session| {
            let flushed = session.engines().scripts.flush();
            session.reply_ok(flushed.map_err(|e| format!("ERR {e}")));
        });
        Ok(())
    },
    ..SUB
};

const KILL: Spec = Spec {
    name: "script|kill",
    arity: 2,
    flags: &["noscript", "allow_busy"],
    summary: "Kill the script currently in execution.",
    run: |ctx, _| ctx.kill_script(Kind::Eval),
    ..SUB
};

/// SCRIPT DEBUG: keel has no Lua debugger, so only NO (the default) is
/// accepted.
const DEBUG: Spec = Spec {
    name: "script|debug",
    arity: 3,
    summary: "Set the debug mode for executed scripts.",
    since: "3.2.0",
    run: |ctx, args| {
        if is(&args[2], "no") {
            ctx.w().ok();
            return Ok(());
        }
        if is(&args[2], "yes") || is(&args[2], "sync") {
            return Err("ERR keel has no Lua debugger: SCRIPT DEBUG accepts only NO".into());
        }
        Err("ERR Use SCRIPT DEBUG YES/SYNC/NO".into())
    },
    ..SUB
};

const SCRIPT_HELP: Spec = Spec {
    name: "script|help",
    group: "scripting",
    since: "5.0.0",
    acl: &["@slow", "@scripting"],
    ..HELP
};

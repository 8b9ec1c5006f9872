//! FUNCTION LOAD | LIST | DELETE | FLUSH | DUMP | RESTORE | STATS | KILL —
//! the function libraries: load one (its code registers its functions),
//! list, delete or flush them, move them between servers as a payload in
//! Redis's format, and see or stop the running function.

use bytes::Bytes;
use keel_script::RestorePolicy;

use crate::cmd::context::scripting::Kind;
use crate::cmd::context::{is, subcommand_syntax_error, Ctx, Error, Spec, BASE, HELP};

/// FUNCTION (container).
pub const SPEC: Spec = Spec {
    name: "function",
    arity: -2,
    acl: &["@slow"],
    group: "scripting",
    summary: "A container for function commands",
    since: "7.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &FLUSH,
        &RESTORE,
        &FUNCTION_HELP,
        &KILL,
        &LOAD,
        &DELETE,
        &DUMP,
        &LIST,
        &STATS,
    ],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["noscript"],
    acl: &["@slow", "@scripting"],
    group: "scripting",
    since: "7.0.0",
    ..BASE
};

const WRITE: Spec = Spec {
    flags: &["write", "noscript"],
    acl: &["@write", "@slow", "@scripting"],
    ..SUB
};

/// A write that may grow memory: refused over maxmemory.
const GROWS: Spec = Spec {
    arity: -3,
    flags: &["write", "denyoom", "noscript"],
    ..WRITE
};

const LOAD: Spec = Spec {
    name: "function|load",
    summary: "Create a function with the given arguments (name, code, description)",
    complexity: "O(1) (considering compilation time is redundant)",
    run: load,
    ..GROWS
};

fn load(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (options, code) = args[2..].split_at(args.len() - 3);
    let mut replace = false;
    for option in options {
        if !is(option, "replace") {
            let option = String::from_utf8_lossy(option);
            return Err(format!("ERR Unknown option given: {option}").into());
        }
        replace = true;
    }
    let code = code[0].clone();
    let replicated = args.to_vec();
    ctx.script_job(move |session| {
        let loaded = session.engines().functions.load(&code, replace);
        match loaded {
            Ok(library) => {
                session.replicate(&replicated);
                session.w().bulk(library.as_bytes())
            }
            Err(e) => session.w().error(&e),
        }
    });
    Ok(())
}

const LIST: Spec = Spec {
    name: "function|list",
    arity: -2,
    summary: "List information about all the functions",
    complexity: "O(N) where N is the number of functions",
    run: list,
    ..SUB
};

fn list(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (mut with_code, mut pattern) = (false, None);
    let mut rest = args[2..].iter();
    while let Some(arg) = rest.next() {
        if !with_code && is(arg, "withcode") {
            with_code = true;
        } else if pattern.is_none() && is(arg, "libraryname") {
            let name = rest
                .next()
                .ok_or("ERR library name argument was not given")?;
            pattern = Some(name.clone());
        } else {
            let arg = String::from_utf8_lossy(arg);
            return Err(format!("ERR Unknown argument {arg}").into());
        }
    }
    ctx.script_job(move |session| {
        let matches = |name: &[u8]| {
            pattern
                .as_ref()
                .is_none_or(|p| keel_store::glob_match(p, name, true))
        };
        let mut out = bytes::BytesMut::new();
        let mut w = keel_resp::Writer::new(&mut out, session.protocol());
        session
            .engines()
            .functions
            .list(&matches, with_code, &mut w);
        session.w().raw(&out);
    });
    Ok(())
}

const DELETE: Spec = Spec {
    name: "function|delete",
    arity: 3,
    summary: "Delete a function by name",
    run: |ctx, args| {
        let library = args[2].clone();
        let replicated = args.to_vec();
        ctx.script_job(move |session| {
            let deleted = session.engines().functions.delete(&library);
            if deleted.is_ok() {
                session.replicate(&replicated);
            }
            session.reply_ok(deleted);
        });
        Ok(())
    },
    ..WRITE
};

const FLUSH: Spec = Spec {
    name: "function|flush",
    arity: -2,
    summary: "Deleting all functions",
    complexity: "O(N) where N is the number of functions deleted",
    run: |ctx, args| {
        match args {
            [_, _] => {}
            [_, _, mode] if is(mode, "sync") || is(mode, "async") => {}
            [_, _, _] => return Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into()),
            _ => return Err(subcommand_syntax_error(args)),
        }
        let replicated = args.to_vec();
        ctx.script_job(move |session| {
            let flushed = session.engines().functions.flush();
            if flushed.is_ok() {
                session.replicate(&replicated);
            }
            session.reply_ok(flushed.map_err(|e| format!("ERR {e}")));
        });
        Ok(())
    },
    ..WRITE
};

const DUMP: Spec = Spec {
    name: "function|dump",
    arity: 2,
    summary: "Dump all functions into a serialized binary payload",
    complexity: "O(N) where N is the number of functions",
    run: |ctx, _| {
        ctx.script_job(|session| {
            let codes = session.engines().functions.codes();
            session.w().bulk(&keel_rdb::dump_functions(&codes));
        });
        Ok(())
    },
    ..SUB
};

const RESTORE: Spec = Spec {
    name: "function|restore",
    summary: "Restore all the functions on the given payload",
    complexity: "O(N) where N is the number of functions on the payload",
    run: restore,
    ..GROWS
};

fn restore(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let policy =
        match args {
            [_, _, _] => RestorePolicy::Append,
            [_, _, _, policy] if is(policy, "append") => RestorePolicy::Append,
            [_, _, _, policy] if is(policy, "replace") => RestorePolicy::Replace,
            [_, _, _, policy] if is(policy, "flush") => RestorePolicy::Flush,
            [_, _, _, _] => return Err(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
                    .into(),
            ),
            _ => return Err(subcommand_syntax_error(args)),
        };
    let payload = args[2].clone();
    let replicated = args.to_vec();
    ctx.script_job(move |session| {
        let budget = match session.heap_limit() {
            0 => usize::MAX,
            limit => limit,
        };
        let codes = match keel_rdb::restore_functions(&payload, budget) {
            Ok(codes) => codes.into_iter().map(Bytes::from).collect(),
            Err(e) => return session.w().error(e.message()),
        };
        let restored = session.engines().functions.restore(codes, policy);
        if restored.is_ok() {
            session.replicate(&replicated);
        }
        session.reply_ok(restored);
    });
    Ok(())
}

/// FUNCTION STATS: what runs and what is loaded, from what the engines
/// last reported, so it answers while a function runs (it may).
const STATS: Spec = Spec {
    name: "function|stats",
    arity: 2,
    flags: &["noscript", "allow_busy"],
    summary:
        "Return information about the function currently running (name, description, duration)",
    run: |ctx, _| {
        let scripting = &ctx.server.scripting;
        let running = scripting.gate.running(ctx.now_ms);
        if running.is_some_and(|r| r.kind == Kind::Eval) {
            return Err(crate::cmd::context::errors::BUSY_EVAL.into());
        }
        let (name, command) = scripting.gate.called();
        let memory = scripting.memory();
        let mut w = ctx.w();
        w.map(2);
        w.bulk(b"running_script");
        match running {
            None => w.null(),
            Some(running) => {
                w.map(3);
                w.bulk(b"name");
                w.bulk(name.as_bytes());
                w.bulk(b"command");
                w.array(command.len());
                command.iter().for_each(|arg| w.bulk(arg));
                w.bulk(b"duration_ms");
                w.integer(running.elapsed_ms as i64);
            }
        }
        w.bulk(b"engines");
        w.map(1);
        w.bulk(b"LUA");
        w.map(2);
        w.bulk(b"libraries_count");
        w.integer(memory.libraries as i64);
        w.bulk(b"functions_count");
        w.integer(memory.functions as i64);
        Ok(())
    },
    ..SUB
};

const KILL: Spec = Spec {
    name: "function|kill",
    arity: 2,
    flags: &["noscript", "allow_busy"],
    summary: "Kill the function currently in execution.",
    run: |ctx, _| ctx.kill_script(Kind::Function),
    ..SUB
};

const FUNCTION_HELP: Spec = Spec {
    name: "function|help",
    group: "scripting",
    since: "7.0.0",
    acl: &["@slow", "@scripting"],
    ..HELP
};

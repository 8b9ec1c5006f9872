//! DEBUG SLEEP seconds | DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE] |
//! DEBUG POPULATE count [prefix] [size] | DEBUG PANIC | DEBUG HELP — the
//! parts of Redis's DEBUG that tests and tools rely on.
//!
//! DEBUG POPULATE creates `count` string keys `<prefix>:<n>` (prefix `key`)
//! holding `value:<n>`, or with `size`, those bytes padded with zero bytes
//! or cut to `size`, leaving existing keys alone, as Redis does. Unlike
//! Redis's, it stays within `maxmemory`: each key makes room as a write
//! does, and when the policy cannot, it stops with OOM.
//!
//! DEBUG RELOAD saves the dataset to the RDB file and loads it back (after
//! emptying every database, unless NOFLUSH; MERGE lets the file's keys
//! replace those present), as a restart would. Meanwhile other clients get
//! `-LOADING`, so none sees the dataset half loaded.
//!
//! DEBUG is refused unless `enable-debug-command` allows it (`yes`, or
//! `local` for loopback clients), as in Redis 7.
//!
//! DEBUG SLEEP stalls the calling connection for the given time (its
//! pipelined commands wait behind it). Redis stalls its one thread, and so
//! every client; keel has no single thread to stall, which is the point. A
//! time too long to represent sleeps for ever, as Redis's would.
//!
//! DEBUG PANIC panics inside the command. Redis crashes; keel closes the
//! calling connection and nothing else (see `crate::connection`), which is
//! what this lets a test check with a real panic.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;

use crate::client::AfterReply;
use crate::config::DebugCommand;
use crate::persistence::load::{load_file, LoadInto};
use crate::persistence::save::save_now;
use crate::persistence::Settings;
use crate::{notice, warning};

use keel_store::{Str, Value};

use crate::cmd::context::{
    errors, is, parse_f64, parse_i64, subcommand_syntax_error, Ctx, Error, Spec, BASE,
};
use crate::eviction::Room;

/// Redis 7's refusal when `enable-debug-command` does not allow the client.
const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

/// DEBUG.
pub const SPEC: Spec = Spec {
    name: "debug",
    arity: -2,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    summary: "A container for debugging commands",
    complexity: "Depends on subcommand.",
    run,
    ..BASE
};

fn run(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let allowed = match ctx.server.config.read().enable_debug_command {
        DebugCommand::Yes => true,
        DebugCommand::Local => ctx.client.handle.addr.ip().is_loopback(),
        DebugCommand::No => false,
    };
    if !allowed {
        return Err(NOT_ALLOWED.into());
    }
    match &args[1..] {
        [sub, seconds] if is(sub, "sleep") => {
            let seconds = parse_f64(seconds).filter(|s| *s > 0.0).unwrap_or(0.0);
            if seconds > 0.0 {
                let pause = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX);
                ctx.client.after_reply = Some(AfterReply::Sleep(pause));
            }
            ctx.w().ok();
        }
        [sub, options @ ..] if is(sub, "reload") => {
            reload(ctx, options)?;
            ctx.w().ok();
        }
        [sub, count, rest @ ..] if is(sub, "populate") && rest.len() <= 2 => {
            populate(ctx, count, rest.first(), rest.get(1))?;
            ctx.w().ok();
        }
        [sub] if is(sub, "panic") => panic!("DEBUG PANIC"),
        [sub] if is(sub, "help") => {
            let lines = [
                "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "SLEEP <seconds>",
                "    Stop the calling connection for <seconds>. A fraction of a second is allowed.",
                "RELOAD [option ...]",
                "    Save the RDB on disk and reload it back to memory. Options:",
                "    * MERGE: the file's keys replace those present.",
                "    * NOFLUSH: do not empty the databases first.",
                "    * NOSAVE: load the file there is, without saving first.",
                "POPULATE <count> [<prefix>] [<size>]",
                "    Create <count> string keys named key:<num>. If <prefix> is specified then",
                "    it is used instead of the 'key' prefix. These are not propagated to",
                "    replicas. Cache-only keys are not created if the key exists.",
                "PANIC",
                "    Panic inside the command: keel closes the calling connection only.",
                "HELP",
                "    Print this help.",
            ];
            let mut w = ctx.w();
            w.array(lines.len());
            lines.iter().for_each(|l| w.simple(l));
        }
        [_, ..] => return Err(subcommand_syntax_error(args)),
        [] => unreachable!("arity is checked by dispatch"),
    }
    Ok(())
}

fn reload(ctx: &mut Ctx, options: &[Bytes]) -> Result<(), Error> {
    let (mut save, mut flush, mut merge) = (true, true, false);
    for option in options {
        if is(option, "nosave") {
            save = false;
        } else if is(option, "noflush") {
            flush = false;
        } else if is(option, "merge") {
            merge = true;
        } else {
            return Err(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.".into(),
            );
        }
    }
    if save {
        save_now(ctx.server).map_err(|_| Error::from("ERR"))?;
    }
    let into = match (flush, merge) {
        (true, _) => LoadInto::Empty,
        (false, true) => LoadInto::Merge,
        (false, false) => LoadInto::Existing,
    };
    let path = Settings::of(&ctx.server.config.read()).path;
    let report = load_file(ctx.server, &path, into).map_err(|e| {
        warning!("{e}");
        Error::from("ERR Error trying to load the RDB dump, check server logs.")
    })?;
    notice!("DB reloaded by DEBUG RELOAD ({} keys)", report.loaded);
    Ok(())
}

fn populate(
    ctx: &mut Ctx,
    count: &Bytes,
    prefix: Option<&Bytes>,
    size: Option<&Bytes>,
) -> Result<(), Error> {
    const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
    let positive = |arg: &Bytes| -> Result<u64, Error> {
        let n = parse_i64(arg).ok().filter(|n| *n >= 0);
        n.map(|n| n as u64).ok_or_else(|| NOT_POSITIVE.into())
    };
    let count = positive(count)?;
    let size = size.map(positive).transpose()?;
    let max_bulk = ctx.server.hot.proto_max_bulk_len.load(Ordering::Relaxed);
    if size.is_some_and(|s| s > max_bulk) {
        return Err("ERR size is larger than proto-max-bulk-len".into());
    }
    let prefix: &[u8] = prefix.map_or(b"key", |p| &p[..]);
    for n in 0..count {
        let mut key = prefix.to_vec();
        key.extend_from_slice(format!(":{n}").as_bytes());
        let mut value = format!("value:{n}").into_bytes();
        let len = size.map_or(value.len(), |s| s as usize);
        let mut room = Room::empty(ctx.server);
        if !room.grow_evicting(ctx.now_ms, key.len() + len + 64) {
            return Err(errors::OOM.into());
        }
        value.resize(len, 0);
        let db = ctx.db();
        let mut shard = db.write(&key);
        if shard.peek(&key).is_none() {
            shard.insert(&key, Value::Str(Str::from_bytes(&value)), None);
        }
    }
    Ok(())
}

//! CLIENT ID | SETNAME | GETNAME | LIST | INFO | KILL | NO-EVICT |
//! NO-TOUCH | REPLY | PAUSE | UNPAUSE | UNBLOCK — inspect and manage
//! connections. NO-TOUCH is a Redis 7.2 subcommand, served as 7.2
//! documents it.

use bytes::Bytes;

use crate::client::{AfterReply, ClientHandle, ReplyMode, Unblock};
use crate::pause::Mode;

use crate::cmd::context::connection::set_name;
use crate::cmd::context::{
    errors, is, parse_i64, subcommand_syntax_error, Ctx, Error, Spec, BASE, HELP,
};

/// CLIENT (container).
pub const SPEC: Spec = Spec {
    name: "client",
    arity: -2,
    acl: &["@slow"],
    group: "connection",
    summary: "A container for client connection commands",
    since: "2.4.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &ID,
        &SETNAME,
        &GETNAME,
        &LIST,
        &INFO,
        &KILL,
        &NO_EVICT,
        &NO_TOUCH,
        &REPLY,
        &PAUSE,
        &UNPAUSE,
        &UNBLOCK,
        &CLIENT_HELP,
    ],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["noscript", "loading", "stale"],
    acl: &["@slow", "@connection"],
    group: "connection",
    ..BASE
};

const ID: Spec = Spec {
    name: "client|id",
    arity: 2,
    summary: "Returns the client ID for the current connection",
    since: "5.0.0",
    run: |ctx, _| {
        let id = ctx.client.handle.id;
        ctx.w().integer(id as i64);
        Ok(())
    },
    ..SUB
};

const SETNAME: Spec = Spec {
    name: "client|setname",
    arity: 3,
    summary: "Set the current connection name",
    since: "2.6.9",
    run: |ctx, args| {
        set_name(ctx, &args[2])?;
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const GETNAME: Spec = Spec {
    name: "client|getname",
    arity: 2,
    summary: "Get the current connection name",
    since: "2.6.9",
    run: |ctx, _| {
        let name = ctx.client.handle.name();
        match name.is_empty() {
            true => ctx.w().null(),
            false => ctx.w().bulk(name.as_bytes()),
        }
        Ok(())
    },
    ..SUB
};

const LIST: Spec = Spec {
    name: "client|list",
    arity: -2,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous", "@connection"],
    summary: "Get the list of client connections",
    since: "2.4.0",
    complexity: "O(N) where N is the number of client connections",
    run: list,
    ..SUB
};

const INFO: Spec = Spec {
    name: "client|info",
    arity: 2,
    summary: "Returns information about the current client connection.",
    since: "6.2.0",
    run: |ctx, _| {
        let line = ctx.client.handle.describe(&ctx.server.commands, ctx.now_ms) + "\n";
        ctx.w().verbatim(b"txt", line.as_bytes());
        Ok(())
    },
    ..SUB
};

const KILL: Spec = Spec {
    name: "client|kill",
    arity: -3,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous", "@connection"],
    summary: "Kill the connection of a client",
    since: "2.4.0",
    complexity: "O(N) where N is the number of client connections",
    run: kill,
    ..SUB
};

const NO_EVICT: Spec = Spec {
    name: "client|no-evict",
    arity: 3,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous", "@connection"],
    summary: "Set client eviction mode for the current connection",
    since: "7.0.0",
    run: |ctx, args| {
        ctx.client.handle.set_no_evict(on_off(&args[2])?);
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

/// Redis 7.2's CLIENT NO-TOUCH.
const NO_TOUCH: Spec = Spec {
    name: "client|no-touch",
    arity: 3,
    summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
    since: "7.2.0",
    run: |ctx, args| {
        ctx.client.handle.set_no_touch(on_off(&args[2])?);
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const REPLY: Spec = Spec {
    name: "client|reply",
    arity: 3,
    summary: "Instruct the server whether to reply to commands",
    since: "3.2.0",
    run: reply,
    ..SUB
};

const PAUSE: Spec = Spec {
    name: "client|pause",
    arity: -3,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous", "@connection"],
    summary: "Stop processing commands from clients for some time",
    since: "2.9.50",
    run: pause,
    ..SUB
};

const UNPAUSE: Spec = Spec {
    name: "client|unpause",
    arity: 2,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous", "@connection"],
    summary: "Resume processing of clients that were paused",
    since: "6.2.0",
    complexity: "O(N) Where N is the number of paused clients",
    run: |ctx, _| {
        ctx.server.pause.unpause();
        ctx.server.store.pause_expiry_until(0);
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const UNBLOCK: Spec = Spec {
    name: "client|unblock",
    arity: -3,
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous", "@connection"],
    summary: "Unblock a client blocked in a blocking command from a different connection",
    since: "5.0.0",
    complexity: "O(log N) where N is the number of client connections",
    run: unblock,
    ..SUB
};

const CLIENT_HELP: Spec = Spec {
    name: "client|help",
    group: "connection",
    acl: &["@slow", "@connection"],
    since: "5.0.0",
    ..HELP
};

/// Parses ON or OFF (NO-EVICT, NO-TOUCH).
fn on_off(arg: &[u8]) -> Result<bool, Error> {
    match arg {
        a if is(a, "on") => Ok(true),
        a if is(a, "off") => Ok(false),
        _ => Err(errors::SYNTAX.into()),
    }
}

/// CLIENT REPLY ON | OFF | SKIP. Only ON replies; SKIP while replies are
/// off changes nothing, as in Redis (see `dispatch::execute`).
fn reply(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let mode = &mut ctx.client.reply_mode;
    match &args[2] {
        a if is(a, "on") => {
            *mode = ReplyMode::On;
            ctx.w().ok();
        }
        a if is(a, "off") => *mode = ReplyMode::Off,
        a if is(a, "skip") => {
            if *mode != ReplyMode::Off {
                *mode = ReplyMode::SkipNext;
            }
        }
        _ => return Err(errors::SYNTAX.into()),
    }
    Ok(())
}

/// The optional last argument of CLIENT PAUSE and UNBLOCK (`args[3]`):
/// `default` when absent, else one of `choices`, `unknown` for another
/// word, and the subcommand syntax error for more arguments.
fn last_option<T: Copy>(
    args: &[Bytes],
    default: T,
    choices: &[(&str, T)],
    unknown: &str,
) -> Result<T, Error> {
    match args.get(3..) {
        None | Some([]) => Ok(default),
        Some([word]) => choices
            .iter()
            .find(|(name, _)| is(word, name))
            .map(|&(_, choice)| choice)
            .ok_or_else(|| Error::from(unknown.to_string())),
        Some(_) => Err(subcommand_syntax_error(args)),
    }
}

/// CLIENT PAUSE timeout [WRITE | ALL]. The timeout is milliseconds from
/// now, added as Redis adds it: one so large that the sum wraps below now
/// pauses nothing.
fn pause(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let mode = last_option(
        args,
        Mode::All,
        &[("write", Mode::Write), ("all", Mode::All)],
        "ERR CLIENT PAUSE mode must be WRITE or ALL",
    )?;
    let timeout = parse_i64(&args[2])
        .map_err(|_| Error::from("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err("ERR timeout is negative".into());
    }
    let now_ms = ctx.now_ms;
    let end_ms = match timeout {
        0 => 0,
        t => t.wrapping_add(now_ms as i64).max(0) as u64,
    };
    let pause = &ctx.server.pause;
    pause.pause(mode, end_ms, now_ms);
    let until = pause.in_force(now_ms).map_or(0, |(_, end)| end);
    ctx.server.store.pause_expiry_until(until);
    ctx.w().ok();
    Ok(())
}

/// CLIENT UNBLOCK id [TIMEOUT | ERROR]: 1 if the client was blocked in a
/// blocking command (BLPOP and friends) and is now unblocked.
fn unblock(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let how = last_option(
        args,
        Unblock::Timeout,
        &[("timeout", Unblock::Timeout), ("error", Unblock::Error)],
        "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
    )?;
    let id = parse_i64(&args[2])?;
    let unblocked = ctx
        .server
        .clients
        .list()
        .iter()
        .any(|c| c.id as i64 == id && c.request_unblock(how));
    ctx.w().integer(unblocked as i64);
    Ok(())
}

fn list(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind = Types::Any;
    match &args[2..] {
        [] => {}
        [opt, name] if is(opt, "type") => {
            kind = client_type(name)?;
        }
        [opt, list @ ..] if is(opt, "id") && !list.is_empty() => {
            let parsed: Result<Vec<u64>, Error> = list
                .iter()
                .map(|id| match parse_i64(id) {
                    Ok(n) if n > 0 => Ok(n as u64),
                    _ => Err("ERR Invalid client ID".into()),
                })
                .collect();
            ids = Some(parsed?);
        }
        _ => return Err(errors::SYNTAX.into()),
    }
    let mut text = String::new();
    for handle in ctx.server.clients.list() {
        let listed = ids.as_ref().is_none_or(|ids| ids.contains(&handle.id));
        if listed && kind.admits(&handle) {
            text.push_str(&handle.describe(&ctx.server.commands, ctx.now_ms));
            text.push('\n');
        }
    }
    ctx.w().verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// The kinds of client keel has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    /// A replica's link to its primary.
    Master,
    /// A replica fed by this server.
    Replica,
}

impl Kind {
    fn of(handle: &ClientHandle) -> Kind {
        use std::sync::atomic::Ordering::Relaxed;
        if handle.primary_link.load(Relaxed) {
            Kind::Master
        } else if handle.replica.load(Relaxed) {
            Kind::Replica
        } else {
            Kind::Normal
        }
    }
}

/// Which kinds of client a TYPE option selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Types {
    /// No TYPE option.
    Any,
    Only(Kind),
    /// A kind Redis has that keel has no client of (pubsub: subscribers
    /// are normal clients here).
    Missing,
}

impl Types {
    fn admits(self, handle: &ClientHandle) -> bool {
        match self {
            Types::Any => true,
            Types::Only(kind) => Kind::of(handle) == kind,
            Types::Missing => false,
        }
    }
}

/// Parses a client type.
fn client_type(kind: &[u8]) -> Result<Types, Error> {
    match kind {
        k if is(k, "normal") => Ok(Types::Only(Kind::Normal)),
        k if is(k, "master") => Ok(Types::Only(Kind::Master)),
        k if is(k, "replica") || is(k, "slave") => Ok(Types::Only(Kind::Replica)),
        k if is(k, "pubsub") => Ok(Types::Missing),
        _ => Err(format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(kind)
        )
        .into()),
    }
}

/// Which clients a CLIENT KILL selects.
struct Filter {
    id: Option<u64>,
    addr: Option<String>,
    laddr: Option<String>,
    kind: Types,
    skip_me: bool,
    max_age: Option<u64>,
    user: Option<String>,
}

fn kill(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    // Old form: CLIENT KILL addr:port, which may kill the caller too.
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(&args[2]).into_owned();
        let filter = Filter {
            id: None,
            addr: Some(addr),
            laddr: None,
            kind: Types::Any,
            skip_me: false,
            max_age: None,
            user: None,
        };
        return match kill_matching(ctx, &filter) {
            0 => Err("ERR No such client".into()),
            _ => {
                ctx.w().ok();
                Ok(())
            }
        };
    }
    let mut filter = Filter {
        id: None,
        addr: None,
        laddr: None,
        kind: Types::Any,
        skip_me: true,
        max_age: None,
        user: None,
    };
    let pairs = &args[2..];
    if !pairs.len().is_multiple_of(2) {
        return Err(errors::SYNTAX.into());
    }
    for pair in pairs.chunks(2) {
        let (opt, value) = (&pair[0], &pair[1]);
        let text = String::from_utf8_lossy(value).into_owned();
        if is(opt, "id") {
            match parse_i64(value) {
                Ok(n) if n > 0 => filter.id = Some(n as u64),
                _ => return Err("ERR client-id should be greater than 0".into()),
            }
        } else if is(opt, "addr") {
            filter.addr = Some(text);
        } else if is(opt, "laddr") {
            filter.laddr = Some(text);
        } else if is(opt, "type") {
            filter.kind = client_type(value)?;
        } else if is(opt, "user") {
            if ctx.server.acl.users().get(value).is_none() {
                return Err(format!("ERR No such user '{text}'").into());
            }
            filter.user = Some(text);
        } else if is(opt, "skipme") {
            filter.skip_me = match value {
                v if is(v, "yes") => true,
                v if is(v, "no") => false,
                _ => return Err(errors::SYNTAX.into()),
            };
        } else if is(opt, "maxage") {
            filter.max_age = Some(parse_i64(value)?.max(0) as u64);
        } else {
            return Err(errors::SYNTAX.into());
        }
    }
    let killed = kill_matching(ctx, &filter);
    ctx.w().integer(killed as i64);
    Ok(())
}

fn kill_matching(ctx: &mut Ctx, filter: &Filter) -> usize {
    let me = ctx.client.handle.id;
    let matches = |c: &ClientHandle| {
        filter.kind.admits(c)
            && filter.id.is_none_or(|id| c.id == id)
            && filter
                .addr
                .as_ref()
                .is_none_or(|a| c.addr.to_string() == *a)
            && filter
                .laddr
                .as_ref()
                .is_none_or(|a| c.local_addr.to_string() == *a)
            && filter
                .max_age
                .is_none_or(|age| c.age_seconds(ctx.now_ms) >= age)
            && filter.user.as_ref().is_none_or(|u| c.user() == *u)
            && !(filter.skip_me && c.id == me)
    };
    let mut killed = 0;
    // A client killed already is gone for Redis, which frees it at once;
    // here its connection may not have noticed yet.
    for handle in ctx.server.clients.list() {
        if matches(&handle) && !handle.is_killed() {
            killed += 1;
            if handle.id == me {
                ctx.client.after_reply = Some(AfterReply::Close);
            } else {
                handle.kill();
            }
        }
    }
    killed
}

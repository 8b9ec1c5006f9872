//! CLIENT ID | SETNAME | GETNAME | LIST | INFO | KILL | NO-EVICT — inspect
//! and manage connections.

use bytes::Bytes;

use crate::client::{AfterReply, ClientHandle};

use crate::cmd::context::connection::set_name;
use crate::cmd::context::{errors, is, parse_i64, Ctx, Error, Spec, BASE, HELP};

/// CLIENT (container).
pub const SPEC: Spec = Spec {
    name: "client",
    arity: -2,
    acl: &["@slow"],
    group: "connection",
    summary: "A container for client connection commands.",
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
    summary: "Returns the unique client ID of the connection.",
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
    summary: "Sets the connection name.",
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
    summary: "Returns the name of the connection.",
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
    summary: "Lists open connections.",
    since: "2.4.0",
    complexity: "O(N) where N is the number of client connections",
    run: list,
    ..SUB
};

const INFO: Spec = Spec {
    name: "client|info",
    arity: 2,
    summary: "Returns information about the connection.",
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
    summary: "Terminates open connections.",
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
    summary: "Sets the client eviction mode of the connection.",
    since: "7.0.0",
    run: |ctx, args| {
        let on = match &args[2] {
            a if is(a, "on") => true,
            a if is(a, "off") => false,
            _ => return Err(errors::SYNTAX.into()),
        };
        ctx.client.handle.set_no_evict(on);
        ctx.w().ok();
        Ok(())
    },
    ..SUB
};

const CLIENT_HELP: Spec = Spec {
    name: "client|help",
    since: "5.0.0",
    ..HELP
};

fn list(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let mut ids: Option<Vec<u64>> = None;
    let mut only_normal = true;
    match &args[2..] {
        [] => {}
        [opt, kind] if is(opt, "type") => {
            only_normal = client_type(kind)?;
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
    if only_normal {
        for handle in ctx.server.clients.list() {
            if ids.as_ref().is_none_or(|ids| ids.contains(&handle.id)) {
                text.push_str(&handle.describe(&ctx.server.commands, ctx.now_ms));
                text.push('\n');
            }
        }
    }
    ctx.w().verbatim(b"txt", text.as_bytes());
    Ok(())
}

/// Parses a client type; true for "normal" (the only kind keel has), false
/// for the kinds Redis has that keel has no client of.
fn client_type(kind: &[u8]) -> Result<bool, Error> {
    match kind {
        k if is(k, "normal") => Ok(true),
        k if ["master", "replica", "slave", "pubsub"]
            .iter()
            .any(|t| is(k, t)) =>
        {
            Ok(false)
        }
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
    normal: bool,
    skip_me: bool,
    max_age: Option<u64>,
}

fn kill(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    // Old form: CLIENT KILL addr:port, which may kill the caller too.
    if args.len() == 3 {
        let addr = String::from_utf8_lossy(&args[2]).into_owned();
        let filter = Filter {
            id: None,
            addr: Some(addr),
            laddr: None,
            normal: true,
            skip_me: false,
            max_age: None,
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
        normal: true,
        skip_me: true,
        max_age: None,
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
            filter.normal = client_type(value)?;
        } else if is(opt, "user") {
            if text != "default" {
                return Err(format!("ERR No such user '{text}'").into());
            }
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
        filter.normal
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
            && !(filter.skip_me && c.id == me)
    };
    let mut killed = 0;
    for handle in ctx.server.clients.list() {
        if matches(&handle) {
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

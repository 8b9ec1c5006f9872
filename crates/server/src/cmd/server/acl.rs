//! ACL SETUSER | GETUSER | DELUSER | LIST | USERS | WHOAMI | CAT | LOG |
//! DRYRUN | GENPASS | LOAD | SAVE — manage ACL users (see `keel_acl` and
//! `crate::acl`), with Redis 7's replies and errors.

use bytes::Bytes;
use keel_acl::{category_bit, Denial, SetUserError, Users, CATEGORIES};

use crate::cmd::context::acl::check;
use crate::cmd::context::{is, parse_i64, subcommand_syntax_error, Ctx, Error, Spec, BASE, HELP};

/// ACL (container).
pub const SPEC: Spec = Spec {
    name: "acl",
    arity: -2,
    acl: &["@slow"],
    group: "server",
    summary: "A container for Access List Control commands ",
    since: "6.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &CAT, &DELUSER, &DRYRUN, &GENPASS, &GETUSER, &LIST, &LOAD, &LOG, &SAVE, &SETUSER, &USERS,
        &WHOAMI, &ACL_HELP,
    ],
    ..BASE
};

/// What the subcommands that change or show users share.
const ADMIN: Spec = Spec {
    flags: &["admin", "noscript", "loading", "stale"],
    acl: &["@admin", "@slow", "@dangerous"],
    group: "server",
    since: "6.0.0",
    complexity: "O(N). Where N is the number of configured users.",
    ..BASE
};

/// What the subcommands anyone may run share.
const OPEN: Spec = Spec {
    flags: &["noscript", "loading", "stale"],
    acl: &["@slow"],
    group: "server",
    since: "6.0.0",
    complexity: "O(1)",
    ..BASE
};

const CAT: Spec = Spec {
    name: "acl|cat",
    arity: -2,
    summary: "List the ACL categories or the commands inside a category",
    complexity: "O(1) since the categories and commands are a fixed set.",
    run: cat,
    ..OPEN
};

const DELUSER: Spec = Spec {
    name: "acl|deluser",
    arity: -3,
    summary: "Remove the specified ACL users and the associated rules",
    complexity: "O(1) amortized time considering the typical user.",
    run: deluser,
    ..ADMIN
};

const DRYRUN: Spec = Spec {
    name: "acl|dryrun",
    arity: -4,
    summary:
        "Returns whether the user can execute the given command without executing the command.",
    since: "7.0.0",
    complexity: "O(1).",
    run: dryrun,
    ..ADMIN
};

const GENPASS: Spec = Spec {
    name: "acl|genpass",
    arity: -2,
    summary: "Generate a pseudorandom secure password to use for ACL users",
    run: genpass,
    ..OPEN
};

const GETUSER: Spec = Spec {
    name: "acl|getuser",
    arity: 3,
    summary: "Get the rules for a specific ACL user",
    complexity:
        "O(N). Where N is the number of password, command and pattern rules that the user has.",
    run: getuser,
    ..ADMIN
};

const LIST: Spec = Spec {
    name: "acl|list",
    arity: 2,
    summary: "List the current ACL rules in ACL config file format",
    run: |ctx, _| list(ctx, true),
    ..ADMIN
};

const USERS: Spec = Spec {
    name: "acl|users",
    arity: 2,
    summary: "List the username of all the configured ACL rules",
    run: |ctx, _| list(ctx, false),
    ..ADMIN
};

const LOAD: Spec = Spec {
    name: "acl|load",
    arity: 2,
    summary: "Reload the ACLs from the configured ACL file",
    run: load,
    ..ADMIN
};

const SAVE: Spec = Spec {
    name: "acl|save",
    arity: 2,
    summary: "Save the current ACL rules in the configured ACL file",
    run: save,
    ..ADMIN
};

const LOG: Spec = Spec {
    name: "acl|log",
    arity: -2,
    summary: "List latest events denied because of ACLs in place",
    complexity: "O(N) with N being the number of entries shown.",
    run: log,
    ..ADMIN
};

const SETUSER: Spec = Spec {
    name: "acl|setuser",
    arity: -3,
    summary: "Modify or create the rules for a specific ACL user",
    complexity: "O(N). Where N is the number of rules provided.",
    run: setuser,
    ..ADMIN
};

const WHOAMI: Spec = Spec {
    name: "acl|whoami",
    arity: 2,
    summary: "Return the name of the user associated to the current connection",
    run: |ctx, _| {
        let name = ctx.client.acl.user_name().to_vec();
        ctx.w().bulk(&name);
        Ok(())
    },
    ..OPEN
};

const ACL_HELP: Spec = Spec {
    name: "acl|help",
    group: "server",
    since: "6.0.0",
    ..HELP
};

fn cat(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    match args {
        [_, _] => {
            let mut w = ctx.w();
            w.array(CATEGORIES.len());
            CATEGORIES.iter().for_each(|c| w.bulk(c.as_bytes()));
        }
        [_, _, category] => {
            let Some(bit) = category_bit(category) else {
                let shown: String = String::from_utf8_lossy(category)
                    .chars()
                    .take(128)
                    .collect();
                return Err(format!("ERR Unknown category '{shown}'").into());
            };
            let names: Vec<&str> = ctx.server.acl.catalog.in_category(bit).collect();
            let mut w = ctx.w();
            w.array(names.len());
            names.iter().for_each(|n| w.bulk(n.as_bytes()));
        }
        _ => return Err(subcommand_syntax_error(args)),
    }
    Ok(())
}

fn setuser(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    (2..args.len()).for_each(|i| ctx.redact(i));
    let name = &args[2];
    if !keel_acl::valid_user_name(name) {
        return Err("ERR Usernames can't contain spaces or null characters".into());
    }
    let rules: Vec<&[u8]> = args[3..].iter().map(|a| &a[..]).collect();
    let acl = &ctx.server.acl;
    acl.update(|users| users.set_user(name, &rules, &acl.catalog))
        .map_err(|e| match e {
            SetUserError::Unmatched(at) => format!(
                "ERR Unmatched parenthesis in acl selector starting at '{}'.",
                String::from_utf8_lossy(&args[3 + at])
            ),
            SetUserError::Rule(rule, why) => format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                String::from_utf8_lossy(&rule),
                why.message()
            ),
        })?;
    drop_subscriptions_no_longer_allowed(ctx, name);
    ctx.w().ok();
    Ok(())
}

/// Disconnects the user's subscribers holding a channel or pattern its
/// new rules no longer allow, as Redis does.
fn drop_subscriptions_no_longer_allowed(ctx: &Ctx, name: &[u8]) {
    let users = ctx.server.acl.users();
    let Some(user) = users.get(name) else { return };
    let shown = String::from_utf8_lossy(name);
    let denied = (ctx.server.pubsub).subscribers_denied(&shown, |c, p| user.allows_channel(c, p));
    denied.iter().for_each(|client| client.kill());
}

fn deluser(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let names = &args[2..];
    if names.iter().any(|n| &n[..] == b"default") {
        return Err("ERR The 'default' user cannot be removed".into());
    }
    let deleted = ctx.server.acl.update(|users| {
        let deleted: Vec<&Bytes> = names.iter().filter(|n| users.delete(n)).collect();
        Ok::<_, ()>(deleted)
    });
    let deleted = deleted.unwrap_or_default();
    for name in &deleted {
        disconnect_user(ctx, name);
    }
    ctx.w().integer(deleted.len() as i64);
    Ok(())
}

/// Disconnects every client logged in as `name` (the user is gone).
fn disconnect_user(ctx: &Ctx, name: &[u8]) {
    let name = String::from_utf8_lossy(name);
    for client in ctx.server.clients.list() {
        if client.user() == name {
            client.kill();
        }
    }
}

fn getuser(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let users = ctx.server.acl.users();
    let catalog = &ctx.server.acl.catalog;
    let Some(user) = users.get(&args[2]) else {
        ctx.w().null();
        return Ok(());
    };
    let (root, others) = user.selectors().split_first().expect("a root selector");
    let mut w = ctx.w();
    w.map(6);
    w.bulk(b"flags");
    let flags = user.flags();
    w.set(flags.len());
    flags.iter().for_each(|f| w.bulk(f.as_bytes()));
    w.bulk(b"passwords");
    w.array(user.password_hashes().len());
    user.password_hashes()
        .iter()
        .for_each(|h| w.bulk(h.as_bytes()));
    let selector = |w: &mut keel_resp::Writer, s: &keel_acl::Selector| {
        w.bulk(b"commands");
        w.bulk(s.describe_commands(catalog).as_bytes());
        w.bulk(b"keys");
        w.bulk(s.describe_keys().as_bytes());
        w.bulk(b"channels");
        w.bulk(s.describe_channels().as_bytes());
    };
    selector(&mut w, root);
    w.bulk(b"selectors");
    w.array(others.len());
    for s in others {
        w.map(3);
        selector(&mut w, s);
    }
    Ok(())
}

fn list(ctx: &mut Ctx, rules: bool) -> Result<(), Error> {
    let users = ctx.server.acl.users();
    let catalog = &ctx.server.acl.catalog;
    let mut w = ctx.w();
    w.array(users.len());
    for user in users.iter() {
        if rules {
            let line = format!(
                "user {} {}",
                String::from_utf8_lossy(user.name()),
                user.describe(catalog)
            );
            w.bulk(line.as_bytes());
        } else {
            w.bulk(user.name());
        }
    }
    Ok(())
}

/// The ACL file, or Redis's error for a server without one.
fn acl_file(ctx: &Ctx) -> Result<String, Error> {
    let path = ctx.server.config.read().value("aclfile");
    if path.is_empty() {
        return Err("ERR This Redis instance is not configured to use an ACL file. You may want to specify users \
                    via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis \
                    configuration file set) in order to store users in the Redis configuration."
            .into());
    }
    Ok(path)
}

fn load(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let path = acl_file(ctx)?;
    let acl = &ctx.server.acl;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("ERR Error loading ACLs, opening file '{path}': {e}"))?;
    let loaded = Users::parse_file(&text, &path, &acl.catalog).map_err(|e| format!("ERR {e}"))?;
    let previous = acl.users();
    let _ = acl.update(|users| {
        *users = loaded;
        Ok::<(), ()>(())
    });
    // Redis frees every user the file replaced, disconnecting its clients.
    for user in previous.iter().filter(|u| u.name() != b"default") {
        disconnect_user(ctx, user.name());
    }
    ctx.w().ok();
    Ok(())
}

fn save(ctx: &mut Ctx, _args: &[Bytes]) -> Result<(), Error> {
    let path = acl_file(ctx)?;
    let text = ctx.server.acl.users().to_file(&ctx.server.acl.catalog);
    let temporary = format!("{path}.tmp-{}-{}", std::process::id(), ctx.now_ms);
    let written =
        std::fs::write(&temporary, text).and_then(|()| std::fs::rename(&temporary, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        crate::warning!("Saving the ACL file '{path}' for ACL SAVE: {e}");
        return Err("ERR There was an error trying to save the ACLs. Please check the server logs for more information".into());
    }
    ctx.w().ok();
    Ok(())
}

fn log(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let count = match args {
        [_, _] => 10,
        [_, _, reset] if is(reset, "reset") => {
            ctx.server.acl.with_log(|log| log.reset());
            ctx.w().ok();
            return Ok(());
        }
        [_, _, count] => parse_i64(count)?.max(0) as usize,
        _ => return Err(subcommand_syntax_error(args)),
    };
    let entries: Vec<keel_acl::Entry> = ctx
        .server
        .acl
        .with_log(|log| log.entries().take(count).cloned().collect());
    let now_ms = ctx.now_ms;
    let mut w = ctx.w();
    w.array(entries.len());
    for entry in entries {
        w.map(7);
        w.bulk(b"count");
        w.integer(entry.count as i64);
        w.bulk(b"reason");
        w.bulk(entry.reason.name().as_bytes());
        w.bulk(b"context");
        w.bulk(entry.context.name().as_bytes());
        w.bulk(b"object");
        w.bulk(&entry.object);
        w.bulk(b"username");
        w.bulk(&entry.username);
        w.bulk(b"age-seconds");
        w.double(now_ms.saturating_sub(entry.at_ms) as f64 / 1000.0);
        w.bulk(b"client-info");
        w.bulk(entry.client_info.as_bytes());
    }
    Ok(())
}

/// Bits ACL GENPASS gives at most.
const GENPASS_MAX_BITS: i64 = 4096;

fn genpass(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let bits = match args {
        [_, _] => 256,
        [_, _, bits] => parse_i64(bits)?,
        _ => return Err(subcommand_syntax_error(args)),
    };
    if bits <= 0 || bits > GENPASS_MAX_BITS {
        return Err(format!(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to {GENPASS_MAX_BITS}"
        )
        .into());
    }
    let chars = (bits as usize).div_ceil(4);
    let password: String = (0..chars)
        .map(|_| char::from_digit(rand::random::<u32>() % 16, 16).expect("a hex digit"))
        .collect();
    ctx.w().bulk(password.as_bytes());
    Ok(())
}

fn dryrun(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let (name, command) = (&args[2], &args[3..]);
    let mut session = ctx.client.acl.clone();
    if ctx.server.acl.users().get(name).is_none() {
        let shown = String::from_utf8_lossy(name);
        return Err(format!("ERR User '{shown}' not found").into());
    }
    session.log_in(&ctx.server.acl, name);
    let table = &ctx.server.commands;
    let id = match crate::cmd::lookup(table, command) {
        crate::cmd::Lookup::Found(id, _) => id,
        crate::cmd::Lookup::WrongArity(id) => {
            let name = table.specs()[id].name;
            return Err(format!("ERR wrong number of arguments for '{name}' command").into());
        }
        crate::cmd::Lookup::Unknown => {
            let shown = String::from_utf8_lossy(&command[0]);
            return Err(format!("ERR Command '{shown}' not found").into());
        }
    };
    let refusal = match check(ctx.server, &session, id, command) {
        Ok(()) => {
            ctx.w().ok();
            return Ok(());
        }
        Err(Denial::Command) => {
            let name = table.specs()[id].name;
            format!("This user has no permissions to run the '{name}' command")
        }
        Err(Denial::Key(pos)) => format!(
            "This user has no permissions to access the '{}' key",
            String::from_utf8_lossy(&command[pos])
        ),
        Err(Denial::Channel(pos)) => format!(
            "This user has no permissions to access the '{}' channel",
            String::from_utf8_lossy(&command[pos])
        ),
    };
    ctx.w().bulk(refusal.as_bytes());
    Ok(())
}

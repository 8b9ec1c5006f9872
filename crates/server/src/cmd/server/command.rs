//! COMMAND [COUNT | INFO | DOCS | LIST | GETKEYS | GETKEYSANDFLAGS] —
//! describe the command table, in Redis 7's reply shapes, for client
//! libraries and redis-cli; GETKEYS and GETKEYSANDFLAGS find the keys of a
//! full command line (and how it uses each).
//! Everything is read from the same [`Spec`]s dispatch uses, so what keel
//! reports is what keel does.

use bytes::Bytes;
use keel_resp::Writer;

use crate::cmd::context::command_meta::{self, meta};
use crate::cmd::context::key_flags::key_flags;
use crate::cmd::context::keys_of;
use crate::cmd::context::{errors, is, Ctx, Error, Spec, BASE, HELP};
use crate::cmd::registry::Table;

/// COMMAND (container; alone, it lists every command's info).
pub const SPEC: Spec = Spec {
    name: "command",
    arity: -1,
    flags: &["loading", "stale"],
    acl: &["@slow", "@connection"],
    group: "server",
    summary: "Get array of Redis command details",
    since: "2.8.13",
    complexity: "O(N) where N is the total number of Redis commands",
    run: |ctx, _| {
        let table = &ctx.server.commands;
        let all: Vec<&Spec> = table.top_level().collect();
        let mut w = ctx.w();
        w.array(all.len());
        all.into_iter().for_each(|s| write_info(&mut w, s));
        Ok(())
    },
    subcommands: &[
        &COUNT,
        &INFO,
        &DOCS,
        &LIST,
        &GETKEYS,
        &GETKEYSANDFLAGS,
        &COMMAND_HELP,
    ],
    ..BASE
};

const SUB: Spec = Spec {
    flags: &["loading", "stale"],
    acl: &["@slow", "@connection"],
    group: "server",
    ..BASE
};

const COUNT: Spec = Spec {
    name: "command|count",
    arity: 2,
    summary: "Get total number of Redis commands",
    since: "2.8.13",
    run: |ctx, _| {
        let n = ctx.server.commands.top_level().count();
        ctx.w().integer(n as i64);
        Ok(())
    },
    ..SUB
};

const INFO: Spec = Spec {
    name: "command|info",
    arity: -2,
    summary: "Get array of specific Redis command details, or all when no argument is given.",
    since: "2.8.13",
    complexity: "O(N) where N is the number of commands to look up",
    run: |ctx, args| {
        let table = &ctx.server.commands;
        let specs = requested(table, &args[2..]);
        let mut w = ctx.w();
        w.array(specs.len());
        for spec in specs {
            match spec {
                Some(s) => write_info(&mut w, s),
                None => w.null_array(),
            }
        }
        Ok(())
    },
    ..SUB
};

const DOCS: Spec = Spec {
    name: "command|docs",
    arity: -2,
    summary: "Get array of specific Redis command documentation",
    since: "7.0.0",
    complexity: "O(N) where N is the number of commands to look up",
    run: |ctx, args| {
        let table = &ctx.server.commands;
        let specs: Vec<&Spec> = requested(table, &args[2..]).into_iter().flatten().collect();
        let mut w = ctx.w();
        w.map(specs.len());
        for spec in specs {
            w.bulk(spec.name.as_bytes());
            write_docs(&mut w, spec);
        }
        Ok(())
    },
    ..SUB
};

const LIST: Spec = Spec {
    name: "command|list",
    arity: -2,
    summary: "Get an array of Redis command names",
    since: "7.0.0",
    complexity: "O(N) where N is the total number of Redis commands",
    run: list,
    ..SUB
};

const GETKEYS: Spec = Spec {
    name: "command|getkeys",
    arity: -4,
    summary: "Extract keys given a full Redis command",
    since: "2.8.13",
    complexity: "O(N) where N is the number of arguments to the command",
    run: |ctx, args| {
        let keys = command_keys(ctx, args)?;
        let mut w = ctx.w();
        w.array(keys.len());
        keys.iter().for_each(|(k, _)| w.bulk(k));
        Ok(())
    },
    ..SUB
};

const GETKEYSANDFLAGS: Spec = Spec {
    name: "command|getkeysandflags",
    arity: -4,
    summary: "Extract keys and access flags given a full Redis command",
    since: "7.0.0",
    complexity: "O(N) where N is the number of arguments to the command",
    run: |ctx, args| {
        let keys = command_keys(ctx, args)?;
        let mut w = ctx.w();
        w.array(keys.len());
        for (key, flags) in keys {
            w.array(2);
            w.bulk(&key);
            w.set(flags.len());
            flags.iter().for_each(|f| w.simple(f));
        }
        Ok(())
    },
    ..SUB
};

const COMMAND_HELP: Spec = Spec {
    name: "command|help",
    group: "server",
    acl: &["@slow", "@connection"],
    since: "5.0.0",
    ..HELP
};

/// The specs named in `names`, or every top-level one when none is named.
fn requested(table: &Table, names: &[Bytes]) -> Vec<Option<&'static Spec>> {
    if names.is_empty() {
        return table.top_level().map(Some).collect();
    }
    names
        .iter()
        .map(|n| table.id(n).map(|id| table.specs()[id]))
        .collect()
}

/// One COMMAND INFO entry: name, arity, flags, first/last/step, ACL
/// categories, tips, key specs (the last two from Redis's own, see
/// [`command_meta`]), subcommands.
fn write_info(w: &mut Writer, spec: &Spec) {
    w.array(10);
    w.bulk(spec.name.as_bytes());
    w.integer(spec.arity as i64);
    w.set(spec.flags.len());
    spec.flags.iter().for_each(|f| w.simple(f));
    let (first, last, step) = spec.keys;
    w.integer(first as i64);
    w.integer(last as i64);
    w.integer(step as i64);
    w.set(spec.acl.len());
    spec.acl.iter().for_each(|c| w.simple(c));
    let meta = meta(spec.name);
    command_meta::write(w, &meta.tips);
    command_meta::write(w, &meta.key_specs);
    // Redis sends an empty set, not an empty array, for no subcommands.
    if spec.subcommands.is_empty() {
        w.set(0);
    } else {
        w.array(spec.subcommands.len());
        spec.subcommands.iter().for_each(|s| write_info(w, s));
    }
}

/// One COMMAND DOCS entry.
fn write_docs(w: &mut Writer, spec: &Spec) {
    let has_subs = !spec.subcommands.is_empty();
    let meta = meta(spec.name);
    // Redis leaves out a complexity it does not document (LOLWUT).
    let fields: Vec<(&str, &str)> = [
        ("summary", spec.summary),
        ("since", spec.since),
        ("group", spec.group),
        ("complexity", spec.complexity),
    ]
    .into_iter()
    .filter(|(field, value)| *field != "complexity" || !value.is_empty())
    .collect();
    w.map(fields.len() + meta.docs.len() + has_subs as usize);
    for (field, value) in fields {
        w.bulk(field.as_bytes());
        w.bulk(value.as_bytes());
    }
    for (field, value) in meta.docs {
        w.bulk(field.as_bytes());
        command_meta::write(w, value);
    }
    if has_subs {
        w.bulk(b"subcommands");
        w.map(spec.subcommands.len());
        for sub in spec.subcommands {
            w.bulk(sub.name.as_bytes());
            write_docs(w, sub);
        }
    }
}

fn list(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let table = &ctx.server.commands;
    let names: Vec<&str> = match &args[2..] {
        [] => table.specs().iter().map(|s| s.name).collect(),
        [filterby, kind, value] if is(filterby, "filterby") => {
            let keep: Box<dyn Fn(&Spec) -> bool> = match kind {
                k if is(k, "pattern") => {
                    Box::new(|s: &Spec| keel_store::glob_match(value, s.name.as_bytes(), true))
                }
                k if is(k, "aclcat") => {
                    let cat = format!("@{}", String::from_utf8_lossy(value).to_ascii_lowercase());
                    Box::new(move |s: &Spec| s.acl.contains(&cat.as_str()))
                }
                k if is(k, "module") => Box::new(|_: &Spec| false),
                _ => return Err(errors::SYNTAX.into()),
            };
            table
                .specs()
                .iter()
                .filter(|s| keep(s))
                .map(|s| s.name)
                .collect()
        }
        _ => return Err(errors::SYNTAX.into()),
    };
    let mut w = ctx.w();
    w.array(names.len());
    names.iter().for_each(|n| w.bulk(n.as_bytes()));
    Ok(())
}

/// The keys of the command line after `COMMAND GETKEYS[ANDFLAGS]`, each
/// with its access flags, or Redis's error for a command line without keys
/// or that is not one.
fn command_keys(ctx: &Ctx, args: &[Bytes]) -> Result<Vec<(Bytes, Vec<&'static str>)>, Error> {
    let table = &ctx.server.commands;
    let command = &args[2..];
    let Some(mut id) = table.id(&command[0]) else {
        return Err("ERR Invalid command specified".into());
    };
    if let Some(sub) = command
        .get(1)
        .filter(|_| !table.specs()[id].subcommands.is_empty())
    {
        let name = format!(
            "{}|{}",
            table.specs()[id].name,
            String::from_utf8_lossy(sub)
        );
        id = table
            .id(name.as_bytes())
            .ok_or(Error::from("ERR Invalid command specified"))?;
    }
    let spec = table.specs()[id];
    let argc = command.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        return Err("ERR Invalid number of arguments specified for command".into());
    }
    let keys =
        keys_of(spec, command).ok_or(Error::from("ERR Invalid arguments specified for command"))?;
    if keys.is_empty() && !spec.has_flag("no_mandatory_keys") {
        return Err("ERR The command has no key arguments".into());
    }
    let flags = key_flags(spec, command, keys.len());
    Ok(keys.into_iter().cloned().zip(flags).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &str) -> Vec<Bytes> {
        words
            .split(' ')
            .map(|w| Bytes::from(w.to_string()))
            .collect()
    }

    fn found(words: &str) -> Option<Vec<String>> {
        let table = Table::new();
        let args = args(words);
        let spec = table.specs()[table.id(&args[0]).expect("a known command")];
        let keys = keys_of(spec, &args)?;
        Some(
            keys.iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect(),
        )
    }

    #[test]
    fn keys_follow_fixed_positions_and_key_counts() {
        let some = |keys: &[&str]| Some(keys.iter().map(|k| k.to_string()).collect());
        assert_eq!(found("mset a 1 b 2"), some(&["a", "b"]));
        assert_eq!(found("ping"), some(&[]));
        assert_eq!(
            found("zunionstore d 2 a b weights 1 2"),
            some(&["d", "a", "b"])
        );
        assert_eq!(found("zinter 2 a b withscores"), some(&["a", "b"]));
        assert_eq!(found("sintercard 3 a b c limit 1"), some(&["a", "b", "c"]));
        assert_eq!(found("zunion 3 a b"), None, "count past the arguments");
        assert_eq!(found("zdiff 0 a"), None, "no key counted");
        assert_eq!(found("zintercard x a"), None, "count not a number");
    }
}

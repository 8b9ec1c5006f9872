//! What dispatch, EXEC, scripts and the ACL command share about ACL
//! checks: the keys and channels a command names, the check itself, and
//! recording a denial (ACL LOG, INFO's counters) with Redis's wording.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use keel_acl::{ChannelUse, Context, Denial, Entry, KeyUse, Reason};

use super::key_flags::key_flag_words;
use super::{keys_of, Ctx, Error, Spec};
use crate::acl::Session;
use crate::client::ClientHandle;
use crate::server::Server;

/// Whether `session`'s user may run command `id` with `args`.
pub fn check(server: &Server, session: &Session, id: usize, args: &[Bytes]) -> Result<(), Denial> {
    if session.unrestricted() {
        return Ok(());
    }
    let Some(user) = session.user() else {
        return Err(Denial::Command);
    };
    let table = &server.commands;
    let spec = table.specs()[id];
    let find_keys = || key_uses(spec, table.key_spec_flags(id), args);
    user.check(
        &server.acl.catalog,
        id,
        args,
        &find_keys,
        &channel_uses(spec, args),
    )
}

/// The keys `args` names and what the command does with each, as its key
/// specs (whose flags are `specs`) say.
fn key_uses(spec: &Spec, specs: &'static [&'static str], args: &[Bytes]) -> Vec<KeyUse> {
    let positions: Vec<usize> = if spec.getkeys.is_none() && !spec.has_flag("movablekeys") {
        spec.key_positions(args.len()).collect()
    } else {
        let keys = keys_of(spec, args).unwrap_or_default();
        let position = |key: &&Bytes| args.iter().position(|a| std::ptr::eq(a, *key));
        keys.iter().filter_map(position).collect()
    };
    let flags = key_flag_words(spec, specs, args, positions.len());
    let has = |flags: &str, flag: &str| flags.split(' ').any(|f| f == flag);
    (positions.into_iter().zip(flags))
        .map(|(pos, flags)| KeyUse {
            pos,
            read: has(flags, "access"),
            write: ["insert", "update", "delete"].iter().any(|f| has(flags, f)),
        })
        .collect()
}

/// The channels a command publishes or subscribes to (unsubscribing needs
/// no permission).
fn channel_uses(spec: &Spec, args: &[Bytes]) -> Vec<ChannelUse> {
    let (first, pattern) = match spec.name {
        "publish" | "spublish" => {
            return vec![ChannelUse {
                pos: 1,
                pattern: false,
            }]
        }
        "subscribe" | "ssubscribe" => (1, false),
        "psubscribe" => (1, true),
        _ => return Vec::new(),
    };
    (first..args.len())
        .map(|pos| ChannelUse { pos, pattern })
        .collect()
}

/// What the ACL log calls the context of a refused command: inside MULTI
/// (queuing or EXEC) or not.
pub fn context_of(ctx: &Ctx) -> Context {
    if ctx.client.tx.queued.is_some() || ctx.client.tx.executing {
        Context::Multi
    } else {
        Context::Toplevel
    }
}

/// The client a denial or failed login is recorded for.
pub struct Caller<'a> {
    pub server: &'a Server,
    /// The connection (a script's caller, for a script's command).
    pub handle: &'a ClientHandle,
    pub user: &'a [u8],
    pub now_ms: u64,
}

impl<'a> Caller<'a> {
    /// The client running `ctx`'s command.
    pub fn of(ctx: &'a Ctx) -> Caller<'a> {
        Caller {
            server: ctx.server,
            handle: &ctx.client.handle,
            user: ctx.client.acl.user_name(),
            now_ms: ctx.now_ms,
        }
    }

    /// Records a denial of command `id` with `args` in the ACL log and
    /// INFO.
    pub fn record_denial(&self, denial: Denial, id: usize, args: &[Bytes], context: Context) {
        let denied = &self.server.acl.denied;
        let (reason, object, counter) = match denial {
            Denial::Command => {
                let name = self.server.commands.specs()[id].name;
                (Reason::Command, name.as_bytes().to_vec(), &denied.command)
            }
            Denial::Key(pos) => (Reason::Key, args[pos].to_vec(), &denied.key),
            Denial::Channel(pos) => (Reason::Channel, args[pos].to_vec(), &denied.channel),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.log(reason, context, object, self.user.to_vec());
    }

    /// Adds an entry for this client to the ACL log.
    pub fn log(&self, reason: Reason, context: Context, object: Vec<u8>, username: Vec<u8>) {
        let server = self.server;
        let max_len = server.config.read().value("acllog-max-len").parse();
        let entry = Entry {
            count: 1,
            reason,
            context,
            object,
            username,
            at_ms: self.now_ms,
            client_info: self.handle.describe(&server.commands, self.now_ms),
        };
        server
            .acl
            .log(entry, max_len.unwrap_or(crate::acl::DEFAULT_LOG_LEN));
    }
}

/// The error a command refused by ACL gets, as Redis's `processCommand`
/// words it.
pub fn denial_error(denial: Denial, spec: &Spec) -> Error {
    match denial {
        Denial::Command => format!(
            "NOPERM this user has no permissions to run the '{}' command",
            spec.name
        )
        .into(),
        Denial::Key(_) => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        Denial::Channel(_) => {
            "NOPERM this user has no permissions to access one of the channels used as arguments"
                .into()
        }
    }
}

/// The error EXEC gives a queued command the user may no longer run.
pub fn exec_denial_error(denial: Denial) -> Error {
    let reason = match denial {
        Denial::Command => "no permission to execute the command or subcommand",
        Denial::Key(_) => "no permission to touch the specified keys",
        Denial::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC \
         call. This command is no longer allowed for the following reason: {reason}"
    )
    .into()
}

/// Why a script's user may not run a command, as `redis.call` says it.
pub fn denial_reason(denial: Denial) -> &'static str {
    match denial {
        Denial::Command => "can't run this command or subcommand",
        Denial::Key(_) => {
            "can't access at least one of the keys mentioned in the command arguments"
        }
        Denial::Channel(_) => "can't publish to the channel mentioned in the command",
    }
}

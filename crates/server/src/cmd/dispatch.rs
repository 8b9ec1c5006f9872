//! Dispatch: what every command would otherwise repeat, in Redis's
//! order: lookup in the registry, arity, authentication, the maxmemory
//! check for commands that may grow memory, MULTI queueing, timing,
//! statistics, the latency histograms and the slow log, and serving
//! clients a write unblocked.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use keel_resp::ReplyLimit;

use super::context::{acl, transaction, ALLOWED_WHILE_SUBSCRIBED};
use super::context::{bytes_a_write_may_add, errors, wrong_arity, Ctx, Error, Spec};
use super::registry::{Flags, Table};
use crate::client::{AfterReply, Client, ClientHandle};
use crate::clock::Now;
use crate::cluster::route::{self, Redirect, Request};
use crate::eviction::Room;
use crate::replication::journal;
use crate::server::{unix_ms, Server};
use crate::stats::Outcome;

/// Formats the unknown-command error exactly as Redis 7 does: the name
/// cut at 128 bytes and the first arguments quoted until 128 bytes, each
/// ending at its first NUL byte as C's `%s` does.
fn unknown_command(args: &[Bytes]) -> Error {
    let c_string = |arg: &[u8], max: usize| {
        let end = arg
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(arg.len())
            .min(max);
        String::from_utf8_lossy(&arg[..end]).into_owned()
    };
    let mut listed = String::new();
    for arg in &args[1..] {
        if listed.len() >= 128 {
            break;
        }
        let text = c_string(arg, 128 - listed.len());
        listed.push_str(&format!("'{text}' "));
    }
    let name = c_string(&args[0], 128);
    format!("ERR unknown command '{name}', with args beginning with: {listed}").into()
}

/// Finds the spec for `args`, descending into container commands, and
/// checks arity. Errors here are "rejected" in Redis's statistics.
pub(super) fn resolve(table: &Table, args: &[Bytes]) -> Result<usize, (Option<usize>, Error)> {
    // A subcommand's own name (`config|get`) is no command a client may
    // send, as in Redis.
    let id = table
        .id(&args[0])
        .filter(|&id| !table.flags(id).has(Flags::SUBCOMMAND))
        .ok_or_else(|| (None, unknown_command(args)))?;
    let spec = table.specs[id];
    if !spec.accepts(args.len()) {
        return Err((Some(id), wrong_arity(spec.name)));
    }
    // A container called alone (COMMAND) runs its own handler.
    if spec.subcommands.is_empty() || args.len() == 1 {
        return Ok(id);
    }
    let sub = &args[1];
    let mut full = Vec::with_capacity(spec.name.len() + 1 + sub.len());
    full.extend_from_slice(spec.name.as_bytes());
    full.push(b'|');
    full.extend_from_slice(sub);
    match table.id(&full) {
        Some(sub_id) if table.specs[sub_id].accepts(args.len()) => Ok(sub_id),
        Some(sub_id) => Err((Some(sub_id), wrong_arity(table.specs[sub_id].name))),
        None => Err((
            Some(id),
            format!(
                "ERR unknown subcommand '{}'. Try {} HELP.",
                String::from_utf8_lossy(&sub[..sub.len().min(128)]),
                spec.name.to_ascii_uppercase()
            )
            .into(),
        )),
    }
}

/// What a command name comes to, for a script's `redis.call`.
pub enum Lookup {
    /// The command (or subcommand) and its spec.
    Found(usize, &'static Spec),
    /// Command (or subcommand) `id`, called with a number of arguments its
    /// arity refuses.
    WrongArity(usize),
    /// No such command, or no such subcommand.
    Unknown,
}

/// Finds the command `args` names, as [`resolve`] does, telling a wrong
/// arity from an unknown command or subcommand.
pub fn lookup(table: &Table, args: &[Bytes]) -> Lookup {
    match resolve(table, args) {
        Ok(id) => Lookup::Found(id, table.specs[id]),
        Err((Some(id), err)) if err.0.starts_with("ERR wrong number of arguments") => {
            Lookup::WrongArity(id)
        }
        Err(_) => Lookup::Unknown,
    }
}

/// Runs command `id` for a script, as `client`, writing its reply to
/// `out`: what [`call`] does for any command (the handler, statistics, the
/// slow log, MONITOR), without what dispatch decides for a connection's
/// request, which the script decided for itself.
pub fn call_nested(
    server: &Server,
    client: &mut Client,
    id: usize,
    args: &[Bytes],
    now_ms: u64,
    out: &mut BytesMut,
) {
    let mut ctx = Ctx {
        server,
        client,
        out,
        now_ms,
        now: Now::read(&server.store),
        redacted: Vec::new(),
        reply_limit: reply_limit(server, 0),
        room: Room::empty(server),
        room_made: 0,
        room_needed: None,
        pushed: false,
        error_counted_elsewhere: false,
    };
    call(&mut ctx, id, args);
    ctx.room.end();
}

/// True if `args` is a quick request: a command Redis flags `fast` that
/// names no key, writes nothing, never blocks and publishes nothing (PING,
/// ECHO, HELLO, AUTH, SELECT, CLIENT SETNAME, ...), or one dispatch refuses
/// (unknown, wrong arity), which costs only its error reply. The acceptor
/// runs a new connection's quick requests itself (see `crate::connection`)
/// and must never run work a client controls the size of: a `fast` read
/// can return a 512 MB value or many elements (GET, LPOP with a count), a
/// write can evict inline or serve blocked clients, and PUBLISH fans out.
/// Anything else waits for the connection's worker.
pub fn is_quick(table: &Table, args: &[Bytes]) -> bool {
    resolve(table, args).map_or(true, |id| {
        let spec = table.specs[id];
        spec.has_flag("fast")
            && spec.keys == (0, 0, 0)
            && !spec.has_flag("write")
            && !spec.has_flag("blocking")
            && spec.group != "pubsub"
    })
}

/// What a connection loads ahead for a request that runs next: the key it
/// names as its first argument, for a command whose first key is there
/// (most), and the member of that key's collection it names, if any (see
/// [`Spec::member`]).
pub fn lookups_ahead<'a>(table: &Table, args: &'a [Bytes]) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
    let Some(spec) = table.id(&args[0]).map(|id| table.specs[id]) else {
        return (None, None);
    };
    if spec.keys.0 != 1 {
        return (None, None);
    }
    let arg = |at: usize| args.get(at).map(|arg| &arg[..]);
    let member = (spec.member != 0).then(|| arg(spec.member)).flatten();
    (arg(1), member)
}

/// Runs one command (or queues it inside MULTI) at `now`, and writes its
/// reply to `out`; `now` moves on to when the command ended (see
/// `crate::clock`). Returns true if the reply grew past what a reply may
/// take without asking the client budget (see [`Ctx::w`]): the room it was
/// granted is given back on return, so the caller must charge `out` itself.
pub fn execute(
    server: &Server,
    client: &mut Client,
    args: &[Bytes],
    out: &mut BytesMut,
    now: &mut Now,
) -> bool {
    let reply_start = out.len();
    let mut ctx = Ctx {
        server,
        client,
        out,
        now_ms: now.unix_ms(),
        now: *now,
        redacted: Vec::new(),
        reply_limit: reply_limit(server, reply_start),
        room: Room::empty(server),
        room_made: 0,
        room_needed: None,
        pushed: false,
        error_counted_elsewhere: false,
    };
    dispatch(&mut ctx, args, reply_start);
    let cluster = &mut ctx.client.cluster;
    if cluster.asking && ctx.client.tx.queued.is_none() && !args[0].eq_ignore_ascii_case(b"asking")
    {
        cluster.asking = false;
    }
    // CLIENT REPLY OFF or SKIP: the reply is dropped, errors included, as
    // Redis drops every reply but pushes to such a client.
    let mode = ctx.client.reply_mode;
    if mode.suppresses() && !ctx.pushed {
        ctx.out.truncate(reply_start);
        // A script's reply comes later: it is dropped then.
        if let Some(AfterReply::Script(job)) = &mut ctx.client.after_reply {
            job.silent = true;
        }
    }
    ctx.client.reply_mode = mode.after_command();
    *now = ctx.now;
    ctx.reply_limit.granted > 0
}

/// If CLIENT PAUSE holds `args` at `now_ms` (see `crate::pause`), whether
/// it counts as a write there: a write, a may-replicate command, or an
/// EXEC whose queue holds one. Commands dispatch would refuse (unknown,
/// wrong arity, NOAUTH) are never held: their error is sent at once, as in
/// Redis.
pub fn held_by_pause(
    server: &Server,
    client: &Client,
    args: &[Bytes],
    now_ms: u64,
) -> Option<bool> {
    server.pause.in_force(now_ms)?;
    let table = &server.commands;
    let id = resolve(table, args).ok()?;
    if client.acl.needs_auth() && !table.specs[id].has_flag("no_auth") {
        return None;
    }
    let writes = command_or_queued(table, client, table.specs[id], args, |spec, args| {
        let top = spec.name.split('|').next().unwrap_or(spec.name);
        match top {
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" => {
                server.scripting.may_write(top, args)
            }
            _ => spec.has_flag("write") || crate::pause::MAY_REPLICATE.contains(&top),
        }
    });
    server.pause.holds(writes, now_ms).then_some(writes)
}

impl Drop for Ctx<'_> {
    /// Gives back the room granted to the reply, on every way out of a
    /// command, a panic included.
    fn drop(&mut self) {
        let granted = std::mem::take(&mut self.reply_limit.granted);
        if granted > 0 {
            self.server.client_budget.recharge(granted, 0);
        }
    }
}

/// Dispatch proper: everything [`execute`] does to a command.
fn dispatch(ctx: &mut Ctx, args: &[Bytes], reply_start: usize) {
    let (server, now_ms) = (ctx.server, ctx.now_ms);
    let table = &server.commands;
    let id = match resolve(table, args) {
        Ok(id) => id,
        Err((id, err)) => return reject(ctx, id, err),
    };
    let (spec, flags) = (table.specs[id], table.flags(id));
    ctx.client.acl.refresh(&server.acl);
    if ctx.client.acl.needs_auth() && !flags.has(Flags::NO_AUTH) {
        return reject(ctx, Some(id), errors::NOAUTH.into());
    }
    if ctx.client.tx.queued.is_some() && flags.has(Flags::NO_MULTI) {
        return reject(
            ctx,
            Some(id),
            "ERR Command not allowed inside a transaction".into(),
        );
    }
    if let Err(denial) = acl::check(server, &ctx.client.acl, id, args) {
        acl::Caller::of(ctx).record_denial(denial, id, args, acl::context_of(ctx));
        return reject(ctx, Some(id), acl::denial_error(denial, spec));
    }
    if let Some(redirect) = routed_elsewhere(ctx, spec, args) {
        // EXEC's transaction is dropped; a command being queued marks it
        // failed: Redis's order, and its plain error (no EXECABORT).
        let error = redirect.error();
        if spec.name == "exec" {
            transaction::discard(server, ctx.client, now_ms);
            ctx.w().error(&error);
            ctx.server.stats.record_rejection(Some(id), &error);
            return;
        }
        return reject(ctx, Some(id), error.into());
    }
    let subscribed = ctx.client.subscriptions.any();
    if subscribed && ctx.client.protocol == keel_resp::Protocol::Resp2 {
        let top = spec.name.split('|').next().unwrap_or(spec.name);
        if !ALLOWED_WHILE_SUBSCRIBED.contains(&top) {
            let refusal = format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.name
            );
            return reject(ctx, Some(id), refusal.into());
        }
    }
    let _inside = server.scripting.gate.enter();
    if let Some(running) = server.scripting.gate.running(now_ms) {
        if running.past_threshold && !flags.has(Flags::ALLOW_BUSY) {
            return reject(ctx, Some(id), running.kind.busy_reply().into());
        }
        // Inside MULTI a command is only queued; EXEC is what runs it.
        let runs_now = ctx.client.tx.queued.is_none() || spec.name == "exec";
        if runs_now && waits_for_script(server, ctx.client, spec, args) {
            ctx.client.after_reply = Some(AfterReply::WaitForScript);
            return;
        }
    }
    let from_primary = ctx.client.is_primary_link;
    if !from_primary && transaction::refused_over_maxmemory(spec, flags, ctx.client) {
        let incoming = bytes_a_command_may_add(server, ctx.client, spec, args);
        match server.make_room(now_ms, incoming) {
            Some(room) => ctx.room = room,
            None => return reject(ctx, Some(id), errors::OOM.into()),
        }
    }
    let writes = |spec: &Spec, _: &[Bytes]| spec.has_flag("write");
    if !from_primary
        && server.replication.is_replica()
        && replica_read_only(server)
        && command_or_queued(table, ctx.client, spec, args, writes)
    {
        return reject(ctx, Some(id), errors::READONLY.into());
    }
    if !from_primary
        && server.persistence.refuses_writes(&server.config)
        && command_or_queued(table, ctx.client, spec, args, writes)
    {
        return reject(ctx, Some(id), crate::persistence::MISCONF.into());
    }
    if server.lacks_replicas() && command_or_queued(table, ctx.client, spec, args, writes) {
        return reject(ctx, Some(id), errors::NOREPLICAS.into());
    }
    if !from_primary
        && !flags.has(Flags::STALE)
        && server.replication.serves_no_stale_data(&server.config)
    {
        return reject(ctx, Some(id), errors::MASTERDOWN.into());
    }
    if server.persistence.loading.active() && !flags.has(Flags::LOADING) {
        return reject(ctx, Some(id), errors::LOADING.into());
    }
    if ctx.client.tx.queued.is_some() && !transaction::runs_inside_multi(spec) {
        transaction::queue(ctx.client, spec, args);
        ctx.w().simple("QUEUED");
        return;
    }
    call(ctx, id, args);
    ctx.room.end();
    if ctx.reply_limit.exceeded {
        drop_oversized_reply(ctx, reply_start);
    }
    if !ctx.client.ready.is_empty() {
        let ready = std::mem::take(&mut ctx.client.ready);
        server.blocking.serve(server, ready);
    }
}

/// Cluster mode: where the request goes if not here (see
/// `crate::cluster::route`). The primary's link is always served, as are
/// commands naming no key.
fn routed_elsewhere(ctx: &mut Ctx, spec: &'static Spec, args: &[Bytes]) -> Option<Redirect> {
    let cluster = ctx.server.cluster.as_ref()?;
    if ctx.client.is_primary_link || !route::names_keys(spec) {
        return None;
    }
    let (server, client) = (ctx.server, &mut *ctx.client);
    let table = &server.commands;
    let single = [(spec, args)];
    let queued: Vec<(&'static Spec, &[Bytes])>;
    let commands: &[(&'static Spec, &[Bytes])] = match &client.tx.queued {
        Some(transaction) if spec.name == "exec" => {
            queued = (transaction.iter())
                .filter_map(|q| resolve(table, q).ok().map(|id| (table.specs[id], &q[..])))
                .collect();
            &queued
        }
        _ if spec.name == "exec" => return None,
        _ => &single,
    };
    let request = Request {
        commands,
        writes: commands.iter().any(|(spec, _)| spec.has_flag("write")),
        is_migrate: spec.name == "migrate",
        asking: client.cluster.asking || spec.has_flag("asking"),
        readonly: client.cluster.readonly,
    };
    let view = cluster.view_for(&mut client.cluster.view);
    route::route(server, cluster, view, &request, ctx.now_ms).err()
}

/// `replica-read-only`.
fn replica_read_only(server: &Server) -> bool {
    server.config.read().value("replica-read-only") == "yes"
}

/// Whether `holds` holds for a command, or, when it is EXEC, for one of
/// the commands its transaction queued (which EXEC runs).
fn command_or_queued(
    table: &Table,
    client: &Client,
    spec: &'static Spec,
    args: &[Bytes],
    holds: impl Fn(&'static Spec, &[Bytes]) -> bool,
) -> bool {
    let queued = || {
        (client.tx.queued.iter().flatten())
            .any(|queued| resolve(table, queued).is_ok_and(|id| holds(table.specs[id], queued)))
    };
    holds(spec, args) || (spec.name == "exec" && queued())
}

/// Whether a command must wait for the running script: it reaches shards
/// the script claimed, or it would run a script (EXEC of a queue holding
/// one runs it here, under the transaction's shards).
fn waits_for_script(server: &Server, client: &Client, spec: &Spec, args: &[Bytes]) -> bool {
    let gate = &server.scripting.gate;
    let shards = match &client.tx.queued {
        Some(queued) if spec.name == "exec" => {
            if queued.iter().any(|q| runs_script(&server.commands, q)) {
                return true;
            }
            let mut shards = transaction::shards_reached(server, client.db, queued);
            for (db, key, _) in &client.tx.watched {
                shards.insert_key(*db, key);
            }
            shards
        }
        _ => transaction::shards_reached(server, client.db, &[args]),
    };
    gate.conflicts(shards.words())
}

/// Whether `args` is a command that runs work on the script engines.
fn runs_script(table: &Table, args: &[Bytes]) -> bool {
    resolve(table, args).is_ok_and(|id| table.specs[id].group == "scripting")
}

/// The error a reply is, without its `-`: `None` for any other reply.
pub fn error_replied(reply: &[u8]) -> Option<String> {
    let line = reply.strip_prefix(b"-")?;
    let end = line
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(line.len());
    Some(String::from_utf8_lossy(&line[..end]).into_owned())
}

/// Replies up to this long never ask the client budget for room: a
/// command's usual reply costs no atomic operation, and each running
/// command (one per thread) may hold this much outside the budget.
const FREE_REPLY_BYTES: usize = 1 << 20;

/// How far a reply starting at `reply_start` in the output buffer may
/// grow: to the `normal` class's hard output limit, asking the client
/// budget for room past its first [`FREE_REPLY_BYTES`], so that a reply
/// being built is counted as it grows, and one that the budget cannot hold
/// closes its client.
fn reply_limit(server: &Server, reply_start: usize) -> ReplyLimit {
    let hard = match server.hot.output_hard_limit.load(Ordering::Relaxed) as usize {
        0 => usize::MAX,
        hard => hard,
    };
    ReplyLimit {
        hard_len: reply_start.saturating_add(hard),
        granted_len: reply_start.saturating_add(FREE_REPLY_BYTES),
        granted: 0,
        exceeded: false,
    }
}

/// A reply that passed the client's output limit, or that the client budget
/// could not hold: what was written of it is dropped and the client closed,
/// as Redis closes a client over its hard limit, instead of holding the
/// whole reply first.
fn drop_oversized_reply(ctx: &mut Ctx, reply_start: usize) {
    let written = ctx.out.len() - reply_start;
    ctx.out.truncate(reply_start);
    ctx.client.after_reply = Some(AfterReply::Close);
    let handle = &ctx.client.handle;
    crate::warning!(
        "Client id={} addr={} closed for overcoming of output buffer limits (a reply stopped at {written} bytes).",
        handle.id,
        handle.addr,
    );
    ctx.server.stats.count_output_limit_disconnection();
}

/// What a command may add to the dataset before it runs, for
/// [`Server::make_room`]: its arguments' share (see
/// [`bytes_a_write_may_add`]), or for EXEC the sum of its queued writes'
/// shares, reserved before it locks the shards its queue reaches, since a
/// queued write cannot evict while they are held (see [`Ctx::reserve`]).
fn bytes_a_command_may_add(server: &Server, client: &Client, spec: &Spec, args: &[Bytes]) -> usize {
    match &client.tx.queued {
        Some(queued) if spec.name == "exec" => queued
            .iter()
            .filter(|queued| {
                resolve(&server.commands, queued)
                    .is_ok_and(|id| server.commands.specs[id].has_flag("denyoom"))
            })
            .map(|queued| bytes_a_write_may_add(server, queued))
            .sum(),
        _ => bytes_a_write_may_add(server, args),
    }
}

/// Runs a resolved, admitted command: the handler, its reply, its
/// statistics, latency and slow log entry. EXEC calls this for each queued
/// command.
pub(super) fn call(ctx: &mut Ctx, id: usize, args: &[Bytes]) {
    let (server, now_ms) = (ctx.server, ctx.now_ms);
    let (spec, flags) = (server.commands.specs[id], server.commands.flags(id));
    ctx.client.handle.note_command(id, ctx.client.db, now_ms);
    ctx.redacted.clear();
    let asked_before = ctx.client.after_reply.is_some();
    let reply_start = ctx.out.len();
    let started = ctx.now.mark();
    let result = run_with_room(ctx, spec, flags, args, reply_start);
    let mut elapsed = ctx.now.advance(started);
    if let Err(Error(msg)) = result {
        ctx.w().error(&msg);
    }
    let error = error_replied(&ctx.out[reply_start..]);
    let outcome = match error {
        Some(_) if std::mem::take(&mut ctx.error_counted_elsewhere) => {
            Outcome::FailedCountedElsewhere
        }
        Some(ref reply) => Outcome::Failed(reply),
        None => Outcome::Succeeded,
    };
    if flags.has(Flags::WRITE) && matches!(outcome, Outcome::Succeeded) {
        server.persistence.note_write();
    }
    // What this command (not one before it in the same EXEC) asked the
    // connection to do after its reply.
    let asked = match asked_before {
        true => None,
        false => ctx.client.after_reply.as_mut(),
    };
    // A blocked command's latency and slow log entry wait until it is
    // served (one that times out has neither, as in Redis); a script's are
    // recorded, with its statistics, once it is done.
    let waits = match asked {
        // DEBUG SLEEP's pause is part of the command, as in Redis, where
        // the command itself sleeps.
        Some(AfterReply::Sleep(pause)) => {
            elapsed = elapsed.saturating_add(*pause);
            None
        }
        Some(AfterReply::Block(blocked)) => Some((&mut blocked.execution, false)),
        Some(AfterReply::Script(job)) => Some((&mut job.execution, true)),
        _ => None,
    };
    match waits {
        Some((execution, scripted)) => {
            *execution = Some(Execution {
                id,
                args: args.to_vec(),
                elapsed,
            });
            if !scripted {
                server.stats.record_call(id, elapsed, outcome);
            }
        }
        None => {
            server.stats.record_call(id, elapsed, outcome);
            let handle = &ctx.client.handle;
            record_execution(server, handle, id, args, &ctx.redacted, elapsed, now_ms);
        }
    }
    if server.pubsub.has_monitors() && !flags.has(Flags::ADMIN) {
        let now_usec = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        // Redis shows a script's commands as coming from "lua".
        let addr = match std::sync::Arc::ptr_eq(&ctx.client.handle, &server.scripting.client_handle)
        {
            true => "lua".to_string(),
            false => ctx.client.handle.addr.to_string(),
        };
        let line = crate::monitor::line(now_usec, ctx.client.db, &addr, args, &ctx.redacted);
        server.pubsub.feed_monitors(line);
    }
    // A write may have made a list appear for blocked clients; they are
    // served once the top-level command is done (see `crate::blocking`).
    if flags.has(Flags::WRITE) && server.blocking.blocked() > 0 {
        let db = ctx.client.db;
        let keys = super::context::keys_of(spec, args)
            .unwrap_or_else(|| spec.key_args(args).collect())
            .into_iter()
            .map(|k| (db, k.clone()));
        ctx.client.ready.extend(keys);
    }
}

/// Runs the handler. A write that found no room short of evicting (see
/// [`Ctx::reserve`]) changed nothing and let go of its shard locks when it
/// returned: room is made by evicting and it runs again, claiming that
/// room. Inside EXEC the transaction holds its locks, so the OOM stands.
/// Once it has run, what it reserved itself is in the dataset, so that
/// reservation ends (the next command of an EXEC does not count it twice).
fn run_with_room(
    ctx: &mut Ctx,
    spec: &'static Spec,
    flags: Flags,
    args: &[Bytes],
    reply_start: usize,
) -> Result<(), Error> {
    let reserved_before = ctx.room.bytes();
    let mut made = 0;
    let result = loop {
        ctx.room_made = made;
        // A write is what the replicas are sent (see `replication::journal`).
        let result = match flags.has(Flags::WRITE) {
            true => journal::recorded(spec, args, ctx.client.db, ctx.now_ms, || {
                (spec.run)(ctx, args)
            }),
            false => (spec.run)(ctx, args),
        };
        let Some(needed) = ctx.room_needed.take() else {
            break result;
        };
        if ctx.client.tx.executing || !ctx.room.grow_evicting(ctx.now_ms, needed) {
            break result;
        }
        made += needed;
        ctx.out.truncate(reply_start);
    };
    ctx.room.shrink_to(reserved_before);
    result
}

/// Adds a command's run to its latency histogram and, if it was slow, to
/// the slow log.
fn record_execution(
    server: &Server,
    client: &ClientHandle,
    id: usize,
    args: &[Bytes],
    redacted: &[usize],
    elapsed: Duration,
    now_ms: u64,
) {
    server.stats.record_latency(id, elapsed);
    let flags = server.commands.flags(id);
    let event = match flags.has(Flags::FAST) {
        true => "fast-command",
        false => "command",
    };
    (server.stats.latency_monitor).observe(event, elapsed, now_ms / 1000);
    if server.slowlog.is_slow(elapsed) && !flags.has(Flags::SKIP_SLOWLOG) {
        server.slowlog.push(args, redacted, elapsed, client);
    }
}

/// A blocked command's run, recorded once the command is served.
pub struct Execution {
    id: usize,
    args: Vec<Bytes>,
    elapsed: Duration,
}

impl Execution {
    /// The memory its arguments hold (the waiter's keys share it) while the
    /// command is blocked: charged to the client budget meanwhile, since a
    /// key may be as large as any argument.
    pub fn held_bytes(&self) -> usize {
        self.args.iter().map(Bytes::len).sum()
    }

    /// Records a script command's whole run, which took `elapsed` and
    /// ended as `outcome`: its statistics, latency and slow log entry.
    pub fn record_run(
        self,
        server: &Server,
        client: &ClientHandle,
        elapsed: Duration,
        outcome: Outcome,
    ) {
        server.stats.record_call(self.id, elapsed, outcome);
        record_execution(server, client, self.id, &self.args, &[], elapsed, unix_ms());
    }

    /// Records the run, adding `serving` (the time to write its reply) to
    /// its own execution time as Redis does.
    pub fn record(self, server: &Server, client: &ClientHandle, serving: Duration) {
        let elapsed = self.elapsed + serving;
        record_execution(server, client, self.id, &self.args, &[], elapsed, unix_ms());
    }
}

/// Refuses a command before it runs; inside MULTI this also dooms the
/// transaction (EXEC will answer EXECABORT), and a refused EXEC discards
/// it, naming why, as in Redis.
fn reject(ctx: &mut Ctx, id: Option<usize>, err: Error) {
    let is_exec = id.is_some_and(|id| ctx.server.commands.specs[id].name == "exec");
    match ctx.client.tx.queued {
        Some(_) if is_exec => {
            transaction::discard(ctx.server, ctx.client, ctx.now_ms);
            let abort = format!("EXECABORT Transaction discarded because of: {}", err.0);
            ctx.w().error(&abort);
        }
        Some(_) => {
            ctx.client.tx.refused = true;
            ctx.w().error(&err.0);
        }
        None => ctx.w().error(&err.0),
    }
    ctx.server.stats.record_rejection(id, &err.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_message_matches_redis() {
        let args: Vec<Bytes> = ["foo", "a", "b"].iter().map(|s| Bytes::from(*s)).collect();
        assert_eq!(
            unknown_command(&args).0,
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        let with_nul: Vec<Bytes> = [&b"fo\0o"[..], b"a\0b"]
            .iter()
            .map(|s| Bytes::copy_from_slice(s))
            .collect();
        assert_eq!(
            unknown_command(&with_nul).0,
            "ERR unknown command 'fo', with args beginning with: 'a' "
        );
    }

    #[test]
    fn quick_requests_are_keyless_fast_reads_that_never_block() {
        let table = Table::new();
        let args = |words: &[&str]| -> Vec<Bytes> {
            words.iter().map(|w| Bytes::from(w.to_string())).collect()
        };
        for quick in [
            &["PING"][..],
            &["HELLO", "3"],
            &["SELECT", "1"],
            &["nosuchcommand"],
            &["get"],
        ] {
            assert!(is_quick(&table, &args(quick)), "{quick:?}");
        }
        for slow in [
            &["GET", "k"][..],
            &["LPOP", "list", "1000"],
            &["SET", "k", "v"],
            &["PUBLISH", "channel", "message"],
            &["KEYS", "*"],
            &["BLPOP", "list", "0"],
            &["BZPOPMIN", "zset", "0"],
            &["EXEC"],
            &["SUBSCRIBE", "channel"],
            &["DEBUG", "SLEEP", "1"],
            &["CLIENT", "LIST"],
        ] {
            assert!(!is_quick(&table, &args(slow)), "{slow:?}");
        }
    }

    #[test]
    fn requests_ahead_name_their_key_and_member() {
        let table = Table::new();
        for (words, key, member) in [
            (&["HSET", "h", "f", "v"][..], Some("h"), Some("f")),
            (&["hget", "h", "f"], Some("h"), Some("f")),
            (&["ZADD", "z", "1", "m"], Some("z"), Some("m")),
            (&["SISMEMBER", "s", "m"], Some("s"), Some("m")),
            (&["HLEN", "h"], Some("h"), None),
            (&["GET", "k"], Some("k"), None),
            (&["ZADD", "z", "1"], Some("z"), None),
            (&["EVAL", "return 1", "1", "k"], None, None),
            (&["PING"], None, None),
            (&["NOSUCHCOMMAND", "k"], None, None),
        ] {
            let args: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
            let (found_key, found_member) = lookups_ahead(&table, &args);
            let expected = (key.map(str::as_bytes), member.map(str::as_bytes));
            assert_eq!((found_key, found_member), expected, "{words:?}");
        }
    }

    #[test]
    fn a_member_argument_is_after_the_first_key() {
        for spec in Table::new().specs().iter().filter(|spec| spec.member != 0) {
            assert_eq!(spec.keys.0, 1, "{}", spec.name);
            assert!(
                spec.arity.unsigned_abs() as usize > spec.member,
                "{}",
                spec.name
            );
        }
    }
}

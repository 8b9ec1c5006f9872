//! The command table and dispatch.
//!
//! Every command is one file in this folder, mini-redis style: a [`Spec`]
//! that says what the command is (name, arity, flags, key positions, docs —
//! what COMMAND INFO/DOCS report and what dispatch checks), and a handler
//! that parses its arguments and applies itself, writing its reply straight
//! into the connection's output buffer. Container commands (CLIENT, CONFIG,
//! OBJECT, ...) list their subcommands as specs of their own, named
//! `container|sub` as Redis names them in INFO commandstats.
//!
//! Dispatch does, in Redis's order, what every command would otherwise
//! repeat: lookup, arity, authentication, the maxmemory check for commands
//! that may grow memory, timing, statistics, the latency histograms and
//! the slow log.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use keel_resp::{ReplyLimit, Writer};

use crate::client::{AfterReply, Client, ClientHandle};
use crate::eviction::Room;
use crate::server::Server;

mod append;
mod auth;
mod blpop;
mod bzpop;
mod client;
mod collection;
mod command;
mod config;
mod copy;
mod dbsize;
mod debug;
mod del;
mod echo;
mod edit;
mod exists;
mod expire;
mod flush;
mod get;
mod getdel;
mod getex;
mod getrange;
mod getset;
mod hdel;
mod hello;
mod hget;
mod hgetall;
mod hincrby;
mod hrandfield;
mod hset;
mod incr;
mod incrbyfloat;
mod info;
mod keys;
mod latency;
pub mod lmove;
mod lpop;
mod lpos;
mod lpush;
mod lrange;
mod lset;
mod memory;
mod mget;
mod mset;
mod multi;
mod object;
mod persist;
mod ping;
mod publish;
mod quit;
mod randomkey;
mod rename;
mod reset;
mod sadd;
mod scan;
mod select;
mod set;
mod setops;
mod setrange;
mod shutdown;
mod sismember;
mod slowlog;
mod smove;
mod spop;
mod srandmember;
mod sscan;
mod strlen;
mod subscribe;
mod time;
mod ttl;
mod type_;
mod zadd;
pub mod zpop;
mod zrandmember;
mod zrange;
mod zscore;
mod zstore;

pub use multi::unwatch_all;

/// A handler: parses `args` (the command name included, as in Redis's argv)
/// and writes its reply, or returns the error to reply with.
pub type Handler = fn(&mut Ctx, &[Bytes]) -> Result<(), Error>;

/// What a command is: everything COMMAND reports and dispatch checks.
pub struct Spec {
    /// Lowercase name; `container|sub` for subcommands.
    pub name: &'static str,
    /// Redis arity: exact argument count including the name, or `-n` for
    /// at least `n`.
    pub arity: i32,
    /// Redis command flags (`write`, `readonly`, `denyoom`, `fast`,
    /// `no_auth`, ...).
    pub flags: &'static [&'static str],
    /// First key, last key (negative counts from the end) and step, as in
    /// COMMAND INFO; (0, 0, 0) for commands without keys.
    pub keys: (i32, i32, i32),
    /// ACL categories (`@read`, `@string`, ...).
    pub acl: &'static [&'static str],
    /// Documentation group (`string`, `generic`, `connection`, `server`).
    pub group: &'static str,
    /// One-line summary, as COMMAND DOCS gives it.
    pub summary: &'static str,
    /// Redis version that introduced the command.
    pub since: &'static str,
    /// Time complexity, as documented.
    pub complexity: &'static str,
    /// The handler; containers dispatch to their subcommands instead.
    pub run: Handler,
    /// Subcommands of a container command.
    pub subcommands: &'static [&'static Spec],
}

impl Spec {
    /// True if the command has flag `flag`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// The key arguments of `args` (the command name first), as the
    /// spec's key positions give them.
    pub fn key_args<'a>(&self, args: &'a [Bytes]) -> impl Iterator<Item = &'a Bytes> {
        let (first, last, step) = self.keys;
        let argc = args.len() as i32;
        let last = if last < 0 { argc + last } else { last };
        // No key positions (first = 0): an empty range.
        let last = if first == 0 { -1 } else { last.min(argc - 1) };
        (first.max(1)..=last)
            .step_by(step.max(1) as usize)
            .map(|i| &args[i as usize])
    }

    fn accepts(&self, argc: usize) -> bool {
        if self.arity >= 0 {
            argc == self.arity as usize
        } else {
            argc >= self.arity.unsigned_abs() as usize
        }
    }
}

/// Defaults for [`Spec`] fields most commands share, so a command file only
/// states what is particular to it.
pub const BASE: Spec = Spec {
    name: "",
    arity: 0,
    flags: &[],
    keys: (0, 0, 0),
    acl: &[],
    group: "generic",
    summary: "",
    since: "1.0.0",
    complexity: "O(1)",
    run: |_, _| Ok(()),
    subcommands: &[],
};

/// The HELP subcommand every container has: one line per subcommand.
pub const HELP: Spec = Spec {
    arity: 2,
    flags: &["loading", "stale"],
    acl: &["@slow"],
    summary: "Returns helpful text about the different subcommands.",
    run: container_help,
    ..BASE
};

fn container_help(ctx: &mut Ctx, args: &[Bytes]) -> Result<(), Error> {
    let table = &ctx.server.commands;
    let container = table.specs[table.id(&args[0]).expect("dispatch found it")];
    let mut lines = vec![format!(
        "{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        container.name.to_ascii_uppercase()
    )];
    for sub in container.subcommands {
        let name = sub.name.split('|').nth(1).unwrap_or(sub.name);
        lines.push(name.to_ascii_uppercase());
        lines.push(format!("    {}", sub.summary));
    }
    let mut w = ctx.w();
    w.array(lines.len());
    lines.iter().for_each(|l| w.simple(l));
    Ok(())
}

/// The top-level commands keel serves.
static COMMANDS: &[&Spec] = &[
    &append::SPEC,
    &auth::SPEC,
    &blpop::BLPOP,
    &blpop::BRPOP,
    &blpop::BLMOVE,
    &bzpop::BZPOPMIN,
    &bzpop::BZPOPMAX,
    &client::SPEC,
    &command::SPEC,
    &config::SPEC,
    &dbsize::SPEC,
    &debug::SPEC,
    &del::DEL,
    &del::UNLINK,
    &echo::SPEC,
    &exists::EXISTS,
    &expire::EXPIRE,
    &expire::PEXPIRE,
    &expire::EXPIREAT,
    &expire::PEXPIREAT,
    &flush::FLUSHDB,
    &flush::FLUSHALL,
    &get::SPEC,
    &getdel::SPEC,
    &getex::SPEC,
    &getrange::SPEC,
    &getset::SPEC,
    &hello::SPEC,
    &hdel::SPEC,
    &hget::HGET,
    &hget::HMGET,
    &hget::HEXISTS,
    &hget::HSTRLEN,
    &hget::HLEN,
    &hgetall::HGETALL,
    &hgetall::HKEYS,
    &hgetall::HVALS,
    &hincrby::HINCRBY,
    &hincrby::HINCRBYFLOAT,
    &hrandfield::SPEC,
    &hset::HSET,
    &hset::HMSET,
    &hset::HSETNX,
    &sscan::HSCAN,
    &sadd::SADD,
    &sadd::SREM,
    &setops::SINTER,
    &setops::SINTERCARD,
    &setops::SINTERSTORE,
    &setops::SUNION,
    &setops::SUNIONSTORE,
    &setops::SDIFF,
    &setops::SDIFFSTORE,
    &sismember::SISMEMBER,
    &sismember::SMISMEMBER,
    &sismember::SCARD,
    &sismember::SMEMBERS,
    &zadd::ZADD,
    &zadd::ZINCRBY,
    &zadd::ZREM,
    &zscore::ZCARD,
    &zscore::ZSCORE,
    &zscore::ZMSCORE,
    &zscore::ZRANK,
    &zscore::ZREVRANK,
    &zrange::ZRANGE,
    &zrange::ZRANGESTORE,
    &zrange::ZREVRANGE,
    &zrange::ZRANGEBYSCORE,
    &zrange::ZREVRANGEBYSCORE,
    &zrange::ZRANGEBYLEX,
    &zrange::ZREVRANGEBYLEX,
    &zrange::ZCOUNT,
    &zrange::ZLEXCOUNT,
    &zpop::ZPOPMIN,
    &zpop::ZPOPMAX,
    &zpop::ZREMRANGEBYRANK,
    &zpop::ZREMRANGEBYSCORE,
    &zpop::ZREMRANGEBYLEX,
    &sscan::ZSCAN,
    &zstore::ZUNION,
    &zstore::ZINTER,
    &zstore::ZDIFF,
    &zstore::ZINTERCARD,
    &zstore::ZUNIONSTORE,
    &zstore::ZINTERSTORE,
    &zstore::ZDIFFSTORE,
    &zrandmember::SPEC,
    &smove::SPEC,
    &spop::SPEC,
    &srandmember::SPEC,
    &sscan::SSCAN,
    &incr::INCR,
    &incr::DECR,
    &incr::INCRBY,
    &incr::DECRBY,
    &incrbyfloat::SPEC,
    &info::SPEC,
    &keys::SPEC,
    &latency::SPEC,
    &lpush::LPUSH,
    &lpush::RPUSH,
    &lpush::LPUSHX,
    &lpush::RPUSHX,
    &lpop::LPOP,
    &lpop::RPOP,
    &lrange::LLEN,
    &lrange::LRANGE,
    &lrange::LINDEX,
    &lset::LSET,
    &lset::LINSERT,
    &lset::LREM,
    &lset::LTRIM,
    &lpos::SPEC,
    &lmove::LMOVE,
    &lmove::RPOPLPUSH,
    &memory::SPEC,
    &mget::SPEC,
    &mset::MSET,
    &mset::MSETNX,
    &multi::MULTI,
    &multi::EXEC,
    &multi::DISCARD,
    &multi::WATCH,
    &multi::UNWATCH,
    &object::SPEC,
    &persist::SPEC,
    &ping::SPEC,
    &publish::PUBLISH,
    &publish::PUBSUB,
    &subscribe::SUBSCRIBE,
    &subscribe::UNSUBSCRIBE,
    &subscribe::PSUBSCRIBE,
    &subscribe::PUNSUBSCRIBE,
    &quit::SPEC,
    &randomkey::SPEC,
    &rename::RENAME,
    &copy::SPEC,
    &rename::RENAMENX,
    &reset::SPEC,
    &scan::SPEC,
    &select::SPEC,
    &set::SET,
    &set::SETNX,
    &set::SETEX,
    &set::PSETEX,
    &setrange::SPEC,
    &shutdown::SPEC,
    &slowlog::SPEC,
    &strlen::SPEC,
    &time::SPEC,
    &exists::TOUCH,
    &ttl::TTL,
    &ttl::PTTL,
    &ttl::EXPIRETIME,
    &ttl::PEXPIRETIME,
    &type_::SPEC,
];

/// A reply error: the message after the `-`, starting with its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub Cow<'static, str>);

impl From<&'static str> for Error {
    fn from(s: &'static str) -> Self {
        Error(Cow::Borrowed(s))
    }
}

impl From<String> for Error {
    fn from(s: String) -> Self {
        Error(Cow::Owned(s))
    }
}

/// Redis's common error replies, spelled once.
pub mod errors {
    /// An operation on a value of another type.
    pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    /// An argument or stored value that is not an `i64`.
    pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
    /// An argument or stored value that is not a float.
    pub const NOT_FLOAT: &str = "ERR value is not a valid float";
    /// Options that do not parse or do not combine.
    pub const SYNTAX: &str = "ERR syntax error";
    /// A missing source key (RENAME).
    pub const NO_SUCH_KEY: &str = "ERR no such key";
    /// A write refused at maxmemory under noeviction.
    pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
    /// A command before AUTH when a password is set.
    pub const NOAUTH: &str = "NOAUTH Authentication required.";
    /// Integer arithmetic past i64.
    pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
    /// A string that would exceed proto-max-bulk-len.
    pub const STRING_TOO_LONG: &str =
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
}

/// Everything a handler may use while it runs: the server, its own
/// connection's state, the output buffer and the instant the command
/// started (all of a command sees one "now", as in Redis).
pub struct Ctx<'a> {
    /// Shared server state.
    pub server: &'a Server,
    /// The calling connection.
    pub client: &'a mut Client,
    /// The connection's output buffer.
    pub out: &'a mut BytesMut,
    /// Unix milliseconds when the command started.
    pub now_ms: u64,
    /// Indexes of the running command's arguments that the slow log must
    /// not show (see [`Ctx::redact`]).
    pub redacted: Vec<usize>,
    /// How far this command's reply may grow `out` (see [`reply_limit`]).
    pub reply_limit: ReplyLimit,
    /// Room reserved in the dataset for the running command (for EXEC, for
    /// its queue): what dispatch made for its arguments, grown by
    /// [`Ctx::reserve`].
    room: Room<'a>,
    /// Room dispatch made by evicting after the command found none, which
    /// its next run claims instead of reserving it again (see [`call`]).
    room_made: usize,
    /// Set by [`Ctx::reserve`] when the room it asked for needs evicting.
    room_needed: Option<usize>,
}

impl<'a> Ctx<'a> {
    /// Keeps argument `index` (a password) out of the slow log, which
    /// shows "(redacted)" instead, as Redis does.
    pub fn redact(&mut self, index: usize) {
        self.redacted.push(index);
    }

    /// A writer for the reply, in the connection's protocol. Once the
    /// reply passes the client's output limit the writer drops what follows
    /// and [`Writer::is_full`] is true: a command producing many elements
    /// checks it to stop early.
    pub fn w(&mut self) -> Writer<'_> {
        let budget: &crate::client_budget::ClientBudget = &self.server.client_budget;
        Writer::limited(
            self.out,
            self.client.protocol,
            &mut self.reply_limit,
            budget,
        )
    }

    /// Reserves `bytes` that the running write adds to the dataset beyond
    /// its arguments (which dispatch reserved for a `denyoom` command): a
    /// write calls it once it knows them and before it changes anything.
    /// Without room short of evicting it fails with OOM, having changed
    /// nothing; dispatch then evicts, holding no shard lock, and runs the
    /// command again (see [`call`]), except inside EXEC, whose locks stay
    /// held, so there the OOM stands.
    pub fn reserve(&mut self, bytes: usize) -> Result<(), Error> {
        let claimed = bytes.min(self.room_made);
        self.room_made -= claimed;
        let bytes = bytes - claimed;
        if bytes == 0 || self.room.try_grow(bytes) {
            return Ok(());
        }
        self.room_needed = Some(bytes);
        Err(errors::OOM.into())
    }

    /// The selected database at this command's instant.
    pub fn db(&self) -> keel_store::Db<'a> {
        self.server.store.db(self.client.db, self.now_ms)
    }

    /// Counts a keyspace lookup for INFO's keyspace_hits/misses.
    pub fn count_lookup(&self, found: bool) {
        self.server.stats.count_lookup(found);
    }
}

/// Parses an integer argument as Redis's `string2ll` does.
pub fn parse_i64(arg: &[u8]) -> Result<i64, Error> {
    keel_store::parse_canonical_i64(arg).ok_or(Error::from(errors::NOT_INTEGER))
}

/// Parses a float argument as Redis's `string2ld` does: no leading space,
/// no trailing garbage, `inf` allowed (callers reject what they must), NaN
/// refused.
pub fn parse_f64(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let value: f64 = match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ if text
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            text.parse().ok()?
        }
        _ => return None,
    };
    (!value.is_nan()).then_some(value)
}

/// Writes a stored string as a bulk reply; integers are formatted on the
/// way out, without an allocation.
pub fn write_str(w: &mut Writer, s: keel_store::StrRef<'_>) {
    match s {
        keel_store::StrRef::Int(n) => {
            let mut digits = [0u8; 20];
            w.bulk(format_i64(n, &mut digits));
        }
        other => w.bulk(&other.to_bytes()),
    }
}

/// Writes `items` one by one with `write`, stopping once the reply is full
/// (see [`Ctx::w`]): a reply of many elements is never produced past the
/// client's output limit.
pub fn write_each<T>(
    w: &mut Writer,
    items: impl Iterator<Item = T>,
    mut write: impl FnMut(&mut Writer, T),
) {
    for item in items {
        if w.is_full() {
            return;
        }
        write(w, item);
    }
}

fn format_i64(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    write!(cursor, "{n}").expect("an i64 fits in 20 bytes");
    let len = cursor.position() as usize;
    &buf[..len]
}

/// The time unit of an expiry argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// EX, EXPIRE, EXAT, SETEX.
    Seconds,
    /// PX, PEXPIRE, PXAT, PSETEX.
    Milliseconds,
}

/// Turns an expiry argument into an absolute deadline in Unix ms, with
/// Redis's overflow checks and its "invalid expire time in '<cmd>'"
/// error. `relative` adds `now_ms` (EX/PX); `allow_non_positive` is for
/// the EXPIRE family, which accepts past times (they delete the key).
pub fn deadline_ms(
    arg: &[u8],
    unit: Unit,
    relative: bool,
    allow_non_positive: bool,
    now_ms: u64,
    command: &str,
) -> Result<i64, Error> {
    let invalid = || Error::from(format!("ERR invalid expire time in '{command}' command"));
    let mut when = parse_i64(arg)?;
    if !allow_non_positive && when <= 0 {
        return Err(invalid());
    }
    if unit == Unit::Seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    if relative {
        when = when.checked_add(now_ms as i64).ok_or_else(invalid)?;
    }
    if !allow_non_positive && when <= 0 {
        return Err(invalid());
    }
    Ok(when)
}

/// Case-insensitive comparison of an argument with an option name.
pub fn is(arg: &[u8], option: &str) -> bool {
    arg.eq_ignore_ascii_case(option.as_bytes())
}

/// The resolved command table: every spec (subcommands included) with a
/// stable id used for statistics.
pub struct Table {
    specs: Vec<&'static Spec>,
    /// By name, with a fast hash: looked up once per command.
    by_name: HashMap<&'static str, usize, foldhash::fast::RandomState>,
}

impl Table {
    /// Builds the table from [`COMMANDS`].
    pub fn new() -> Table {
        let mut specs = Vec::new();
        for &spec in COMMANDS {
            specs.push(spec);
            specs.extend(spec.subcommands.iter().copied());
        }
        let by_name = specs.iter().enumerate().map(|(i, s)| (s.name, i)).collect();
        Table { specs, by_name }
    }

    /// Every spec, by id.
    pub fn specs(&self) -> &[&'static Spec] {
        &self.specs
    }

    /// The top-level commands.
    pub fn top_level(&self) -> impl Iterator<Item = &'static Spec> + '_ {
        self.specs.iter().copied().filter(|s| !s.name.contains('|'))
    }

    /// The id of the command called `name` (any case; `a|b` for
    /// subcommands).
    pub fn id(&self, name: &[u8]) -> Option<usize> {
        let mut lower = [0u8; 64];
        let name = lower.get_mut(..name.len()).map(|buf| {
            buf.copy_from_slice(name);
            buf.make_ascii_lowercase();
            &*buf
        })?;
        self.by_name.get(std::str::from_utf8(name).ok()?).copied()
    }
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
}

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

/// Redis's wrong-arity error for command `name`.
pub fn wrong_arity(name: &str) -> Error {
    format!("ERR wrong number of arguments for '{name}' command").into()
}

/// Redis's error for a container's subcommand that it does not know or
/// that has arguments its arity allowed but its handler does not.
pub fn subcommand_syntax_error(args: &[Bytes]) -> Error {
    let sub = &args[1][..args[1].len().min(128)];
    format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        String::from_utf8_lossy(&args[0]).to_ascii_uppercase()
    )
    .into()
}

/// Finds the spec for `args`, descending into container commands, and
/// checks arity. Errors here are "rejected" in Redis's statistics.
fn resolve(table: &Table, args: &[Bytes]) -> Result<usize, (Option<usize>, Error)> {
    let id = table
        .id(&args[0])
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

/// Runs one command (or queues it inside MULTI) and writes its reply to
/// `out`. Returns true if the reply grew past what a reply may take without
/// asking the client budget (see [`Ctx::w`]): the room it was granted is
/// given back on return, so the caller must charge `out` itself.
pub fn execute(server: &Server, client: &mut Client, args: &[Bytes], out: &mut BytesMut) -> bool {
    let reply_start = out.len();
    let mut ctx = Ctx {
        server,
        client,
        out,
        now_ms: crate::server::unix_ms(),
        redacted: Vec::new(),
        reply_limit: reply_limit(server, reply_start),
        room: Room::empty(server),
        room_made: 0,
        room_needed: None,
    };
    dispatch(&mut ctx, args, reply_start);
    ctx.reply_limit.granted > 0
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
    let spec = table.specs[id];
    if !ctx.client.authenticated && !spec.has_flag("no_auth") {
        return reject(ctx, Some(id), errors::NOAUTH.into());
    }
    let subscribed = ctx.client.subscriptions.count() > 0;
    if subscribed && ctx.client.protocol == keel_resp::Protocol::Resp2 {
        let top = spec.name.split('|').next().unwrap_or(spec.name);
        if !subscribe::ALLOWED_WHILE_SUBSCRIBED.contains(&top) {
            let refusal = format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.name
            );
            return reject(ctx, Some(id), refusal.into());
        }
    }
    if multi::refused_over_maxmemory(spec, ctx.client) {
        let incoming = bytes_a_command_may_add(server, ctx.client, spec, args);
        match server.make_room(now_ms, incoming) {
            Some(room) => ctx.room = room,
            None => return reject(ctx, Some(id), errors::OOM.into()),
        }
    }
    if ctx.client.tx.queued.is_some() && !multi::runs_inside_multi(spec) {
        multi::queue(ctx.client, spec, args);
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

/// What a write may add to the dataset, known from its arguments alone:
/// the arguments (keys, values, members) as allocated (the allocator rounds
/// a request up by at most a quarter, see `keel_store::size_class`), a new
/// key's metadata, and the growth of the tables that may hold it. A write
/// that adds more than its arguments (SETRANGE's padding, COPY, a *STORE's
/// result) reserves the rest itself with [`Ctx::reserve`]; a collection
/// changing encoding can add a little more, and the room is checked again
/// when the write is done.
fn bytes_a_write_may_add(server: &Server, args: &[Bytes]) -> usize {
    const NEW_KEY_METADATA_BYTES: usize = 128;
    let argument_bytes: usize = args.iter().map(|a| a.len()).sum();
    argument_bytes
        + argument_bytes / 4
        + NEW_KEY_METADATA_BYTES
        + server.store.largest_table_growth()
}

/// Runs a resolved, admitted command: the handler, its reply, its
/// statistics, latency and slow log entry. EXEC calls this for each queued
/// command.
fn call(ctx: &mut Ctx, id: usize, args: &[Bytes]) {
    let (server, now_ms) = (ctx.server, ctx.now_ms);
    let spec = server.commands.specs[id];
    ctx.client.handle.note_command(id, ctx.client.db, now_ms);
    ctx.redacted.clear();
    let asked_before = ctx.client.after_reply.is_some();
    let reply_start = ctx.out.len();
    let started = Instant::now();
    let result = run_with_room(ctx, spec, args, reply_start);
    let mut elapsed = started.elapsed();
    let failed = match result {
        Ok(()) => ctx.out.get(reply_start) == Some(&b'-'),
        Err(Error(msg)) => {
            ctx.w().error(&msg);
            true
        }
    };
    // What this command (not one before it in the same EXEC) asked the
    // connection to do after its reply.
    let asked = match asked_before {
        true => None,
        false => ctx.client.after_reply.as_mut(),
    };
    let blocked = match asked {
        // DEBUG SLEEP's pause is part of the command, as in Redis, where
        // the command itself sleeps.
        Some(AfterReply::Sleep(pause)) => {
            elapsed = elapsed.saturating_add(*pause);
            None
        }
        Some(AfterReply::Block(blocked)) => Some(blocked),
        _ => None,
    };
    server.stats.record_call(id, elapsed, failed);
    match blocked {
        // A blocked command's latency and slow log entry wait until it is
        // served; one that times out has neither, as in Redis.
        Some(blocked) => {
            blocked.execution = Some(Execution {
                id,
                args: args.to_vec(),
                elapsed,
            });
        }
        None => record_execution(server, &ctx.client.handle, id, args, &ctx.redacted, elapsed),
    }
    // A write may have made a list appear for blocked clients; they are
    // served once the top-level command is done (see `crate::blocking`).
    if spec.has_flag("write") && server.blocking.blocked() > 0 {
        let db = ctx.client.db;
        let keys = spec.key_args(args).map(|k| (db, k.clone()));
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
    spec: &Spec,
    args: &[Bytes],
    reply_start: usize,
) -> Result<(), Error> {
    let reserved_before = ctx.room.bytes();
    let mut made = 0;
    let result = loop {
        ctx.room_made = made;
        let result = (spec.run)(ctx, args);
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
) {
    server.stats.record_latency(id, elapsed);
    if server.slowlog.is_slow(elapsed) && !server.commands.specs[id].has_flag("skip_slowlog") {
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

    /// Records the run, adding `serving` (the time to write its reply) to
    /// its own execution time as Redis does.
    pub fn record(self, server: &Server, client: &ClientHandle, serving: Duration) {
        let elapsed = self.elapsed + serving;
        record_execution(server, client, self.id, &self.args, &[], elapsed);
    }
}

/// Refuses a command before it runs; inside MULTI this also dooms the
/// transaction (EXEC will answer EXECABORT), and a refused EXEC discards
/// it, naming why, as in Redis.
fn reject(ctx: &mut Ctx, id: Option<usize>, err: Error) {
    let is_exec = id.is_some_and(|id| ctx.server.commands.specs[id].name == "exec");
    match ctx.client.tx.queued {
        Some(_) if is_exec => {
            multi::discard(ctx.server, ctx.client, ctx.now_ms);
            let abort = format!("EXECABORT Transaction discarded because of: {}", err.0);
            ctx.w().error(&abort);
        }
        Some(_) => {
            ctx.client.tx.refused = true;
            ctx.w().error(&err.0);
        }
        None => ctx.w().error(&err.0),
    }
    ctx.server.stats.record_rejection(id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_unique_lowercase_and_subcommands_are_reachable() {
        let table = Table::new();
        let mut seen = std::collections::HashSet::new();
        for spec in table.specs() {
            assert_eq!(spec.name, spec.name.to_ascii_lowercase());
            assert!(seen.insert(spec.name), "{} twice", spec.name);
            assert!(spec.arity != 0, "{} has no arity", spec.name);
            assert!(!spec.summary.is_empty(), "{} has no summary", spec.name);
        }
        assert!(table.id(b"GeT").is_some());
        assert!(table.id(b"config|get").is_some());
        assert!(table.id(&[b'x'; 100]).is_none());
    }

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
    fn floats_parse_like_redis() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"3e2"), Some(300.0));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        for bad in [&b""[..], b" 1", b"1 ", b"abc", b"nan", b"1x", b"0x10"] {
            assert_eq!(parse_f64(bad), None, "{bad:?}");
        }
    }
}

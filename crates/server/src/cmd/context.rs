//! What a command file may use: [`Ctx`] (the server, the calling
//! connection, the reply writer and store access), [`Spec`] to declare
//! itself, [`Error`] and Redis's common [`errors`], and the argument
//! helpers every family shares; its submodules hold what several commands
//! share (collections, string options, sorted-set ranges, pops, ...).
//! Command files depend on this module only, never on each other; the
//! registry lists them and dispatch runs them.

use std::borrow::Cow;

use bytes::{Bytes, BytesMut};
use keel_resp::{ReplyLimit, Writer};

use crate::client::Client;
use crate::clock::Now;
use crate::eviction::Room;
pub use crate::pubsub::{KeyspaceEvents as Events, Notifier};
pub use crate::replication::journal;
use crate::server::Server;

pub mod acl;
pub mod bitmap;
pub mod cluster;
pub mod collection;
pub mod command_meta;
pub mod connection;
pub mod edit;
pub mod geo;
pub mod hll;
pub mod key_flags;
pub mod keys;
pub mod long_double;
pub mod pop;
pub mod random;
pub mod scripting;
pub mod serialized;
pub mod stream;
pub mod strings;
pub mod transaction;
pub mod zset;

/// A handler: parses `args` (the command name included, as in Redis's argv)
/// and writes its reply, or returns the error to reply with.
pub type Handler = fn(&mut Ctx, &[Bytes]) -> Result<(), Error>;

/// A command's key finder: its keys in `args` (the command name first), or
/// `None` when they cannot be told.
pub type GetKeys = for<'a> fn(&Spec, &'a [Bytes]) -> Option<Vec<&'a Bytes>>;

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
    /// Finds the keys where the key positions alone do not tell them (a
    /// key count, a STORE option), as Redis's getkeys procedures do; see
    /// [`keys_of`] and [`keys`].
    pub getkeys: Option<GetKeys>,
    /// Subcommands of a container command.
    pub subcommands: &'static [&'static Spec],
    /// The argument naming a member of the key's hash, set or sorted set
    /// (HSET's field, ZADD's member), 0 for none: what a connection loads
    /// ahead for a pipeline on one large collection. A hint only: where
    /// options move it (ZADD key NX score member), the wrong argument is
    /// loaded ahead, for nothing.
    pub member: usize,
}

impl Spec {
    /// True if the command has flag `flag`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// The key arguments of `args` (the command name first), as the
    /// spec's key positions give them.
    pub fn key_args<'a>(&self, args: &'a [Bytes]) -> impl Iterator<Item = &'a Bytes> {
        self.key_positions(args.len()).map(|i| &args[i])
    }

    /// The positions of the key arguments in `argc` arguments (the command
    /// name first), as the spec's key positions give them.
    pub fn key_positions(&self, argc: usize) -> impl Iterator<Item = usize> {
        let (first, last, step) = self.keys;
        let argc = argc as i32;
        let last = if last < 0 { argc + last } else { last };
        // No key positions (first = 0): an empty range.
        let last = if first == 0 { -1 } else { last.min(argc - 1) };
        (first.max(1)..=last)
            .step_by(step.max(1) as usize)
            .map(|i| i as usize)
    }

    pub(super) fn accepts(&self, argc: usize) -> bool {
        if self.arity >= 0 {
            argc == self.arity as usize
        } else {
            argc >= self.arity.unsigned_abs() as usize
        }
    }
}

/// The key arguments of `args` (the command name first): what the spec's
/// key finder finds, or else its key positions. `None` when they cannot be
/// told: a command with keys at moving positions and no finder, or a finder
/// that cannot make sense of the arguments.
pub fn keys_of<'a>(spec: &Spec, args: &'a [Bytes]) -> Option<Vec<&'a Bytes>> {
    match spec.getkeys {
        Some(find) => find(spec, args),
        None if spec.has_flag("movablekeys") => None,
        None => Some(spec.key_args(args).collect()),
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
    getkeys: None,
    subcommands: &[],
    member: 0,
};

/// The HELP subcommand every container has: one line per subcommand.
pub const HELP: Spec = Spec {
    arity: 2,
    flags: &["loading", "stale"],
    acl: &["@slow"],
    summary: "Show helpful text about the different subcommands",
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

/// The Redis version whose behaviour keel follows, reported where clients
/// look for a Redis version (HELLO, INFO's redis_version).
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";

/// Commands a RESP2 connection may send while subscribed: it can only
/// receive pushes as arrays, so Redis refuses everything else.
pub const ALLOWED_WHILE_SUBSCRIBED: &[&str] = &[
    "subscribe",
    "ssubscribe",
    "unsubscribe",
    "sunsubscribe",
    "psubscribe",
    "punsubscribe",
    "ping",
    "quit",
    "reset",
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
    /// A replica whose link is down, with `replica-serve-stale-data no`.
    pub const MASTERDOWN: &str =
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
    /// A client's write to a read-only replica.
    pub const READONLY: &str = "READONLY You can't write against a read only replica.";
    /// A command Redis does not run while the dataset loads.
    pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";
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
    /// Any command but SCRIPT KILL and SHUTDOWN NOSAVE while an EVAL
    /// script runs past `busy-reply-threshold`.
    pub const BUSY_EVAL: &str =
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
    /// The same while a function runs.
    pub const BUSY_FUNCTION: &str =
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
    /// A write while `min-replicas-to-write` asks for more replicas than
    /// are connected.
    pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
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
    /// The clocks as latest read: when the running command started, or
    /// for EXEC and scripts, when their latest command ended.
    pub(super) now: Now,
    /// Indexes of the running command's arguments that the slow log must
    /// not show (see [`Ctx::redact`]).
    pub redacted: Vec<usize>,
    /// How far this command's reply may grow `out` (see `dispatch::reply_limit`).
    pub reply_limit: ReplyLimit,
    /// Room reserved in the dataset for the running command (for EXEC, for
    /// its queue): what dispatch made for its arguments, grown by
    /// [`Ctx::reserve`].
    pub(super) room: Room<'a>,
    /// Room dispatch made by evicting after the command found none, which
    /// its next run claims instead of reserving it again (see `dispatch::call`).
    pub(super) room_made: usize,
    /// Set by [`Ctx::reserve`] when the room it asked for needs evicting.
    pub(super) room_needed: Option<usize>,
    /// Set by [`Ctx::pushes`]: the reply is pushes, sent under CLIENT
    /// REPLY OFF.
    pub(super) pushed: bool,
    /// Set when the error this command replies is one a command it ran
    /// counted already (a script's failed `redis.call`): its own failure
    /// counts, not the error again.
    pub(super) error_counted_elsewhere: bool,
}

impl<'a> Ctx<'a> {
    /// Keeps argument `index` (a password) out of the slow log, which
    /// shows "(redacted)" instead, as Redis does.
    pub fn redact(&mut self, index: usize) {
        self.redacted.push(index);
    }

    /// Whether a script runs this command (its `redis.call`), as Redis's
    /// `CLIENT_SCRIPT` flag tells.
    pub fn run_by_script(&self) -> bool {
        std::sync::Arc::ptr_eq(&self.client.handle, &self.server.scripting.client_handle)
    }

    /// Marks the reply as pub/sub pushes (subscription confirmations),
    /// which CLIENT REPLY OFF and SKIP do not silence, as in Redis.
    pub fn pushes(&mut self) {
        self.pushed = true;
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
    /// command again (see `dispatch::call`), except inside EXEC, whose locks stay
    /// held, so there the OOM stands.
    pub fn reserve(&mut self, bytes: usize) -> Result<(), Error> {
        // A replica applies its primary's writes whatever its own
        // `maxmemory` (Redis's `replica-ignore-maxmemory yes`): the primary
        // bounds the dataset, and a refused write would part the two.
        if self.client.is_primary_link {
            return Ok(());
        }
        let claimed = bytes.min(self.room_made);
        self.room_made -= claimed;
        let bytes = bytes - claimed;
        if bytes == 0 || self.room.try_grow(bytes) {
            return Ok(());
        }
        self.room_needed = Some(bytes);
        Err(errors::OOM.into())
    }

    /// Reserves `bytes` of a value the command builds before it stores it
    /// (SORT ... STORE), so building it cannot pass `maxmemory` before the
    /// whole is reserved; [`Ctx::release_building`] ends it once the value
    /// is built, just before it is stored (and reserved) whole.
    pub fn reserve_building(&mut self, bytes: usize) -> Result<(), Error> {
        if self.client.is_primary_link || self.room.try_grow(bytes) {
            return Ok(());
        }
        self.room_needed = Some(bytes);
        Err(errors::OOM.into())
    }

    /// Ends `bytes` of what [`Ctx::reserve_building`] reserved.
    pub fn release_building(&mut self, bytes: usize) {
        let kept = self.room.bytes() - bytes;
        self.room.shrink_to(kept);
    }

    /// The selected database at this command's instant; with CLIENT
    /// NO-TOUCH on, accesses through it leave keys' LRU/LFU data alone.
    pub fn db(&self) -> keel_store::Db<'a> {
        let db = self.db_touching();
        match self.client.handle.no_touch() {
            true => db.without_touch(),
            false => db,
        }
    }

    /// The selected database, recording accesses even under CLIENT
    /// NO-TOUCH (TOUCH, whose purpose is the access).
    pub fn db_touching(&self) -> keel_store::Db<'a> {
        (self.server.store).db_at(self.client.db, self.now_ms, self.now.access_clock())
    }

    /// Counts a read's lookup of `key` for INFO's keyspace_hits/misses; a
    /// miss is a `keymiss` keyspace event.
    pub fn count_lookup(&self, key: &[u8], found: bool) {
        self.lookups().count(key, found);
    }

    /// [`Ctx::count_lookup`] for code that reads while the context is
    /// borrowed (SORT's patterns).
    pub fn lookups(&self) -> Lookups<'a> {
        Lookups {
            server: self.server,
            events: self.notifier(),
        }
    }

    /// Sends `args` to the replicas as they are: a write outside the
    /// keyspace (PUBLISH), which the store does not see (see
    /// `replication::journal`).
    pub fn replicate(&self, args: &[Bytes]) {
        let backlog = &self.server.replication.backlog;
        journal::Journal { backlog }.outside_the_keyspace(args);
    }

    /// Publishes keyspace event `event` of class `class` (see [`Events`])
    /// for `key` in the selected database, as Redis's
    /// `notifyKeyspaceEvent`: a write calls it after its change, in Redis's
    /// order. With notifications off it costs one relaxed load.
    #[inline]
    pub fn notify(&self, class: u64, event: &str, key: &[u8]) {
        self.notify_in(self.client.db, class, event, key);
    }

    /// Where this command's keyspace events go (the selected database).
    pub fn notifier(&self) -> Notifier<'a> {
        Notifier {
            pubsub: &self.server.pubsub,
            db: self.client.db,
        }
    }

    /// [`Ctx::notify`] for a key of database `db` (MOVE).
    #[inline]
    pub fn notify_in(&self, db: usize, class: u64, event: &str, key: &[u8]) {
        self.server.pubsub.notify(class, event, db, key);
    }
}

/// Counts reads' lookups (see [`Ctx::count_lookup`]).
#[derive(Clone, Copy)]
pub struct Lookups<'a> {
    server: &'a Server,
    events: Notifier<'a>,
}

impl Lookups<'_> {
    /// Counts a lookup of `key` for INFO; a miss is a `keymiss` event.
    pub fn count(&self, key: &[u8], found: bool) {
        self.server.stats.count_lookup(found);
        if !found {
            self.events.notify(Events::MISS, "keymiss", key);
        }
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
pub fn bytes_a_write_may_add(server: &Server, args: &[Bytes]) -> usize {
    const NEW_KEY_METADATA_BYTES: usize = 128;
    let argument_bytes: usize = args.iter().map(|a| a.len()).sum();
    argument_bytes
        + argument_bytes / 4
        + NEW_KEY_METADATA_BYTES
        + server.store.largest_table_growth()
}

/// Parses an integer argument as Redis's `string2ll` does.
pub fn parse_i64(arg: &[u8]) -> Result<i64, Error> {
    keel_store::parse_canonical_i64(arg).ok_or(Error::from(errors::NOT_INTEGER))
}

/// Parses a float argument as Redis's `string2ld` does: no leading space,
/// no trailing garbage, `inf` allowed (callers reject what they must), NaN
/// refused.
pub fn parse_f64(arg: &[u8]) -> Option<f64> {
    // What clients send most (ZADD's scores), an integer of up to 15
    // digits, is exact as a double and read in one pass.
    if let Some(value) = parse_short_integer(arg) {
        return Some(value);
    }
    let infinite = |words: &[&[u8]]| words.iter().any(|word| arg.eq_ignore_ascii_case(word));
    let value = if infinite(&[b"inf", b"+inf", b"infinity", b"+infinity"]) {
        f64::INFINITY
    } else if infinite(&[b"-inf", b"-infinity"]) {
        f64::NEG_INFINITY
    } else if !arg.is_empty()
        && arg
            .iter()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
    {
        std::str::from_utf8(arg).ok()?.parse().ok()?
    } else {
        return None;
    };
    (!value.is_nan()).then_some(value)
}

/// `arg` as a double if it is an optional minus sign and 1 to 15 digits.
/// Not `parse_canonical_i64`: strtod also reads leading zeros (the
/// zero-padded scores redis-benchmark sends) and `-0`.
fn parse_short_integer(arg: &[u8]) -> Option<f64> {
    let (negative, digits) = match arg.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, arg),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut n: u64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(digit - b'0');
    }
    // Below 2^53, so exact; `-` of 0 is -0, as strtod reads "-0".
    Some(if negative { -(n as f64) } else { n as f64 })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_parse_like_redis() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"3e2"), Some(300.0));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"INFinity"), Some(f64::INFINITY));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"abc",
            b"nan",
            b"1x",
            b"0x10",
            b"-",
            b"--1",
        ] {
            assert_eq!(parse_f64(bad), None, "{bad:?}");
        }
        // The integer shortcut agrees with the general parse, -0 included.
        let integers = [
            "0",
            "-0",
            "7",
            "007",
            "-42",
            "999999999999999",
            "-123456789012345",
        ];
        for text in integers.iter().copied().chain(["1234567890123456", "+5"]) {
            let parsed = parse_f64(text.as_bytes()).expect("a number");
            let general: f64 = text.parse().expect("a number");
            assert_eq!(parsed.to_bits(), general.to_bits(), "{text}");
        }
    }
}

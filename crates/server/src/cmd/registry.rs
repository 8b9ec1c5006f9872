//! The registry: every command keel serves, as the [`Spec`] its file
//! declares, resolved into the [`Table`] dispatch looks commands up in.

use std::collections::HashMap;

use super::context::{key_flags, Spec};
use super::{
    bitmap, cluster, connection, generic, geo, hash, hll, list, pubsub, replication, scripting,
    server, set, sort, stream, string, transactions, zset,
};

/// The top-level commands keel serves.
static COMMANDS: &[&Spec] = &[
    &server::acl::SPEC,
    &string::append::SPEC,
    &connection::auth::SPEC,
    &bitmap::bitcount::SPEC,
    &bitmap::bitfield::BITFIELD,
    &bitmap::bitfield::BITFIELD_RO,
    &bitmap::bitop::SPEC,
    &bitmap::bitpos::SPEC,
    &list::blpop::BLPOP,
    &list::blpop::BRPOP,
    &list::blpop::BLMOVE,
    &list::blpop::BRPOPLPUSH,
    &list::lmpop::BLMPOP,
    &list::lmpop::LMPOP,
    &zset::bzpop::BZPOPMIN,
    &zset::bzpop::BZPOPMAX,
    &zset::zmpop::BZMPOP,
    &zset::zmpop::ZMPOP,
    &connection::client::SPEC,
    &cluster::SPEC,
    &cluster::asking::ASKING,
    &cluster::asking::READONLY,
    &cluster::asking::READWRITE,
    &server::command::SPEC,
    &server::config::SPEC,
    &server::dbsize::SPEC,
    &server::debug::SPEC,
    &generic::del::DEL,
    &generic::del::UNLINK,
    &generic::dump::SPEC,
    &generic::restore::RESTORE,
    &generic::restore::RESTORE_ASKING,
    &generic::migrate::SPEC,
    &connection::echo::SPEC,
    &generic::exists::EXISTS,
    &generic::expire::EXPIRE,
    &generic::expire::PEXPIRE,
    &generic::expire::EXPIREAT,
    &generic::expire::PEXPIREAT,
    &server::flush::FLUSHDB,
    &server::flush::FLUSHALL,
    &string::get::SPEC,
    &bitmap::getbit::SPEC,
    &string::getdel::SPEC,
    &string::getex::SPEC,
    &string::getrange::SPEC,
    &string::getset::SPEC,
    &connection::hello::SPEC,
    &hash::hdel::SPEC,
    &hash::hget::HGET,
    &hash::hget::HMGET,
    &hash::hget::HEXISTS,
    &hash::hget::HSTRLEN,
    &hash::hget::HLEN,
    &hash::hgetall::HGETALL,
    &hash::hgetall::HKEYS,
    &hash::hgetall::HVALS,
    &hash::hincrby::HINCRBY,
    &hash::hincrby::HINCRBYFLOAT,
    &hash::hrandfield::SPEC,
    &hash::hset::HSET,
    &hash::hset::HMSET,
    &hash::hset::HSETNX,
    &set::sscan::HSCAN,
    &set::sadd::SADD,
    &set::sadd::SREM,
    &set::setops::SINTER,
    &set::setops::SINTERCARD,
    &set::setops::SINTERSTORE,
    &set::setops::SUNION,
    &set::setops::SUNIONSTORE,
    &set::setops::SDIFF,
    &set::setops::SDIFFSTORE,
    &set::sismember::SISMEMBER,
    &set::sismember::SMISMEMBER,
    &set::sismember::SCARD,
    &set::sismember::SMEMBERS,
    &zset::zadd::ZADD,
    &zset::zadd::ZINCRBY,
    &zset::zadd::ZREM,
    &zset::zscore::ZCARD,
    &zset::zscore::ZSCORE,
    &zset::zscore::ZMSCORE,
    &zset::zscore::ZRANK,
    &zset::zscore::ZREVRANK,
    &zset::zrange::ZRANGE,
    &zset::zrange::ZRANGESTORE,
    &zset::zrange::ZREVRANGE,
    &zset::zrange::ZRANGEBYSCORE,
    &zset::zrange::ZREVRANGEBYSCORE,
    &zset::zrange::ZRANGEBYLEX,
    &zset::zrange::ZREVRANGEBYLEX,
    &zset::zrange::ZCOUNT,
    &zset::zrange::ZLEXCOUNT,
    &zset::zpop::ZPOPMIN,
    &zset::zpop::ZPOPMAX,
    &zset::zpop::ZREMRANGEBYRANK,
    &zset::zpop::ZREMRANGEBYSCORE,
    &zset::zpop::ZREMRANGEBYLEX,
    &set::sscan::ZSCAN,
    &zset::zstore::ZUNION,
    &zset::zstore::ZINTER,
    &zset::zstore::ZDIFF,
    &zset::zstore::ZINTERCARD,
    &zset::zstore::ZUNIONSTORE,
    &zset::zstore::ZINTERSTORE,
    &zset::zstore::ZDIFFSTORE,
    &zset::zrandmember::SPEC,
    &geo::geoadd::GEOADD,
    &geo::geopos::GEOPOS,
    &geo::geopos::GEOHASH,
    &geo::geopos::GEODIST,
    &geo::search::GEORADIUS,
    &geo::search::GEORADIUSBYMEMBER,
    &geo::search::GEORADIUS_RO,
    &geo::search::GEORADIUSBYMEMBER_RO,
    &geo::search::GEOSEARCH,
    &geo::search::GEOSEARCHSTORE,
    &set::smove::SPEC,
    &set::spop::SPEC,
    &set::srandmember::SPEC,
    &set::sscan::SSCAN,
    &string::incr::INCR,
    &string::incr::DECR,
    &string::incr::INCRBY,
    &string::incr::DECRBY,
    &string::incrbyfloat::SPEC,
    &server::info::SPEC,
    &generic::keys::SPEC,
    &generic::move_::SPEC,
    &server::latency::SPEC,
    &string::lcs::SPEC,
    &list::lpush::LPUSH,
    &list::lpush::RPUSH,
    &list::lpush::LPUSHX,
    &list::lpush::RPUSHX,
    &list::lpop::LPOP,
    &list::lpop::RPOP,
    &list::lrange::LLEN,
    &list::lrange::LRANGE,
    &list::lrange::LINDEX,
    &list::lset::LSET,
    &list::lset::LINSERT,
    &list::lset::LREM,
    &list::lset::LTRIM,
    &list::lpos::SPEC,
    &list::lmove::LMOVE,
    &list::lmove::RPOPLPUSH,
    &server::memory::SPEC,
    &string::mget::SPEC,
    &string::mset::MSET,
    &string::mset::MSETNX,
    &transactions::multi::MULTI,
    &transactions::multi::EXEC,
    &transactions::multi::DISCARD,
    &transactions::multi::WATCH,
    &transactions::multi::UNWATCH,
    &generic::object::SPEC,
    &generic::persist::SPEC,
    &hll::pfadd::SPEC,
    &hll::pfcount::SPEC,
    &hll::pfdebug::PFDEBUG,
    &hll::pfmerge::SPEC,
    &hll::pfdebug::PFSELFTEST,
    &connection::ping::SPEC,
    &pubsub::publish::PUBLISH,
    &pubsub::publish::PUBSUB,
    &pubsub::subscribe::SUBSCRIBE,
    &pubsub::subscribe::UNSUBSCRIBE,
    &pubsub::subscribe::PSUBSCRIBE,
    &pubsub::subscribe::PUNSUBSCRIBE,
    &pubsub::publish::SPUBLISH,
    &pubsub::subscribe::SSUBSCRIBE,
    &pubsub::subscribe::SUNSUBSCRIBE,
    &connection::quit::SPEC,
    &generic::randomkey::SPEC,
    &generic::rename::RENAME,
    &generic::copy::SPEC,
    &generic::rename::RENAMENX,
    &connection::reset::SPEC,
    &generic::scan::SPEC,
    &connection::select::SPEC,
    &bitmap::setbit::SPEC,
    &string::set::SET,
    &string::set::SETNX,
    &string::set::SETEX,
    &string::set::PSETEX,
    &string::setrange::SPEC,
    &server::shutdown::SPEC,
    &server::save::SAVE,
    &server::save::BGSAVE,
    &server::save::LASTSAVE,
    &replication::replconf::SPEC,
    &replication::replicaof::REPLICAOF,
    &replication::replicaof::SLAVEOF,
    &replication::role::SPEC,
    &replication::sync::SYNC,
    &replication::sync::PSYNC,
    &generic::swapdb::SPEC,
    &server::slowlog::SPEC,
    &sort::sort_::SORT,
    &sort::sort_::SORT_RO,
    &server::monitor::SPEC,
    &string::strlen::SPEC,
    &string::getrange::SUBSTR,
    &server::time::SPEC,
    &server::wait::SPEC,
    &server::lolwut::SPEC,
    &generic::exists::TOUCH,
    &generic::ttl::TTL,
    &generic::ttl::PTTL,
    &generic::ttl::EXPIRETIME,
    &generic::ttl::PEXPIRETIME,
    &generic::type_::SPEC,
    &scripting::eval::EVAL,
    &scripting::eval::EVALSHA,
    &scripting::eval::EVAL_RO,
    &scripting::eval::EVALSHA_RO,
    &scripting::script::SPEC,
    &scripting::fcall::FCALL,
    &scripting::fcall::FCALL_RO,
    &scripting::function::SPEC,
    &stream::xadd::SPEC,
    &stream::xlen::SPEC,
    &stream::xrange::XRANGE,
    &stream::xrange::XREVRANGE,
    &stream::xdel::SPEC,
    &stream::xtrim::SPEC,
    &stream::xsetid::SPEC,
    &stream::xread::XREAD,
    &stream::xread::XREADGROUP,
    &stream::xgroup::SPEC,
    &stream::xack::SPEC,
    &stream::xpending::SPEC,
    &stream::xclaim::XCLAIM,
    &stream::xclaim::XAUTOCLAIM,
    &stream::xinfo::SPEC,
];

/// The resolved command table: every spec (subcommands included) with a
/// stable id used for statistics.
pub struct Table {
    pub(super) specs: Vec<&'static Spec>,
    /// The flags dispatch checks on every command, by id.
    flags: Vec<Flags>,
    /// The flags of each command's key specs, by id (see `key_flags`).
    key_spec_flags: Vec<&'static [&'static str]>,
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
        let flags = specs.iter().map(|spec| Flags::of(spec)).collect();
        let key_spec_flags = specs
            .iter()
            .map(|spec| key_flags::spec_flags(spec))
            .collect();
        Table {
            specs,
            flags,
            key_spec_flags,
            by_name,
        }
    }

    /// The flags of command `id` that dispatch checks.
    pub fn flags(&self, id: usize) -> Flags {
        self.flags[id]
    }

    /// The flags of command `id`'s key specs, in order.
    pub fn key_spec_flags(&self, id: usize) -> &'static [&'static str] {
        self.key_spec_flags[id]
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
        let Some(packed) = pack_short_name(name) else {
            return self.look_up(name);
        };
        let (latest, latest_id) = LATEST_NAME.get();
        if latest == packed {
            return Some(latest_id);
        }
        let id = self.look_up(name)?;
        LATEST_NAME.set((packed, id));
        Some(id)
    }

    fn look_up(&self, name: &[u8]) -> Option<usize> {
        let mut lower = [0u8; 64];
        let name = lower.get_mut(..name.len()).map(|buf| {
            buf.copy_from_slice(name);
            buf.make_ascii_lowercase();
            &*buf
        })?;
        self.by_name.get(std::str::from_utf8(name).ok()?).copied()
    }
}

thread_local! {
    /// The latest short name this thread looked up, exactly as sent, and
    /// its id: a pipeline repeats one command, and comparing one word is
    /// cheaper than folding case and hashing. Every table numbers the
    /// commands alike ([`COMMANDS`] in order), so the id holds for any.
    static LATEST_NAME: std::cell::Cell<(u64, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// A name of 1 to 7 bytes as one word: its bytes, then its length in the
/// top byte, so no two names share a word and no name is 0.
fn pack_short_name(name: &[u8]) -> Option<u64> {
    if name.is_empty() || name.len() > 7 {
        return None;
    }
    let mut bytes = [0u8; 8];
    bytes[..name.len()].copy_from_slice(name);
    bytes[7] = name.len() as u8;
    Some(u64::from_le_bytes(bytes))
}

/// The command flags dispatch checks on every command, as bits: a spec's
/// flags are names, and comparing them took several string comparisons
/// per command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(u16);

impl Flags {
    pub const WRITE: Flags = Flags(1);
    pub const DENYOOM: Flags = Flags(1 << 1);
    pub const FAST: Flags = Flags(1 << 2);
    pub const ADMIN: Flags = Flags(1 << 3);
    pub const NO_AUTH: Flags = Flags(1 << 4);
    pub const NO_MULTI: Flags = Flags(1 << 5);
    pub const STALE: Flags = Flags(1 << 6);
    pub const LOADING: Flags = Flags(1 << 7);
    pub const SKIP_SLOWLOG: Flags = Flags(1 << 8);
    pub const ALLOW_BUSY: Flags = Flags(1 << 9);
    /// A container's subcommand (`config|get`): no name a client may send.
    pub const SUBCOMMAND: Flags = Flags(1 << 10);

    const NAMED: [(&'static str, Flags); 10] = [
        ("write", Flags::WRITE),
        ("denyoom", Flags::DENYOOM),
        ("fast", Flags::FAST),
        ("admin", Flags::ADMIN),
        ("no_auth", Flags::NO_AUTH),
        ("no_multi", Flags::NO_MULTI),
        ("stale", Flags::STALE),
        ("loading", Flags::LOADING),
        ("skip_slowlog", Flags::SKIP_SLOWLOG),
        ("allow_busy", Flags::ALLOW_BUSY),
    ];

    fn of(spec: &Spec) -> Flags {
        let bits = (Flags::NAMED.iter())
            .filter(|(name, _)| spec.has_flag(name))
            .fold(0, |bits, (_, flag)| bits | flag.0);
        match spec.name.contains('|') {
            true => Flags(bits | Flags::SUBCOMMAND.0),
            false => Flags(bits),
        }
    }

    /// True if every flag of `flags` is set.
    pub fn has(self, flags: Flags) -> bool {
        self.0 & flags.0 == flags.0
    }
}

impl Default for Table {
    fn default() -> Self {
        Table::new()
    }
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
    fn flag_bits_are_the_specs_flag_names() {
        let table = Table::new();
        for (id, spec) in table.specs().iter().enumerate() {
            for (name, flag) in Flags::NAMED {
                assert_eq!(
                    table.flags(id).has(flag),
                    spec.has_flag(name),
                    "{} {name}",
                    spec.name
                );
            }
            let subcommand = table.flags(id).has(Flags::SUBCOMMAND);
            assert_eq!(subcommand, spec.name.contains('|'), "{}", spec.name);
        }
        let set = table.flags(table.id(b"set").expect("SET"));
        assert_eq!(table.id(b"SET"), table.id(b"set"));
        assert_eq!(table.id(b"get"), Some(table.look_up(b"get").expect("GET")));
        assert_eq!(table.id(b"GeT"), table.id(b"get"));
        assert_eq!(
            table.id(b"get\0"),
            None,
            "a name is compared with its length"
        );
        assert_eq!(table.id(b"nosuch"), None);
        assert!(set.has(Flags::WRITE) && set.has(Flags::DENYOOM) && !set.has(Flags::FAST));
    }
}

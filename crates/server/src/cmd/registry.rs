//! The registry: every command keel serves, as the [`Spec`] its file
//! declares, resolved into the [`Table`] dispatch looks commands up in.

use std::collections::HashMap;

use super::context::Spec;
use super::{
    append, auth, blpop, bzpop, client, command, config, copy, dbsize, debug, del, echo, exists,
    expire, flush, get, getdel, getex, getrange, getset, hdel, hello, hget, hgetall, hincrby,
    hrandfield, hset, incr, incrbyfloat, info, keys, latency, lmove, lpop, lpos, lpush, lrange,
    lset, memory, mget, mset, multi, object, persist, ping, publish, quit, randomkey, rename,
    reset, sadd, scan, select, set, setops, setrange, shutdown, sismember, slowlog, smove, spop,
    srandmember, sscan, strlen, subscribe, time, ttl, type_, zadd, zpop, zrandmember, zrange,
    zscore, zstore,
};

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

/// The resolved command table: every spec (subcommands included) with a
/// stable id used for statistics.
pub struct Table {
    pub(super) specs: Vec<&'static Spec>,
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
}

//! The access flags of each command's keys, as Redis 7.0's key specs give
//! them (COMMAND GETKEYSANDFLAGS): `RO`/`RW`/`OW`/`RM` (read only, read
//! and write, overwrite, remove) and what is done with the value
//! (`access`, `update`, `insert`, `delete`), for every Redis command with
//! keys, so a command keel adds reports Redis's flags without more work.
//!
//! A command's keys take the flags of its key specs in order: the first
//! keys one spec each, the last spec all the keys left (ZUNIONSTORE's
//! destination, then its sources). Specs whose keys GETKEYS does not
//! report (SORT's BY and GET patterns, MIGRATE's KEYS list) are left out.
//! A command missing here (one of keel's own) gets `RW access update` if
//! it writes, else `RO access`. Where Redis marks the flags
//! `variable_flags`, they depend on the arguments, as Redis's own rules
//! for SET and BITFIELD decide.

use bytes::Bytes;

use super::{is, Spec};

/// Each command's key specs' flags, by name (sorted, for binary search).
static KEY_SPEC_FLAGS: &[(&str, &[&str])] = &[
    ("append", &["RW insert"]),
    ("bitcount", &["RO access"]),
    ("bitfield", &["RW access update variable_flags"]),
    ("bitfield_ro", &["RO access"]),
    ("bitop", &["OW update", "RO access"]),
    ("bitpos", &["RO access"]),
    ("blmove", &["RW access delete", "RW insert"]),
    ("blmpop", &["RW access delete"]),
    ("blpop", &["RW access delete"]),
    ("brpop", &["RW access delete"]),
    ("brpoplpush", &["RW access delete", "RW insert"]),
    ("bzmpop", &["RW access delete"]),
    ("bzpopmax", &["RW access delete"]),
    ("bzpopmin", &["RW access delete"]),
    ("copy", &["RO access", "OW update"]),
    ("decr", &["RW access update"]),
    ("decrby", &["RW access update"]),
    ("del", &["RM delete"]),
    ("dump", &["RO access"]),
    ("eval", &["RW access update"]),
    ("eval_ro", &["RO access"]),
    ("evalsha", &["RW access update"]),
    ("evalsha_ro", &["RO access"]),
    ("exists", &["RO"]),
    ("expire", &["RW update"]),
    ("expireat", &["RW update"]),
    ("expiretime", &["RO access"]),
    ("fcall", &["RW access update"]),
    ("fcall_ro", &["RO access"]),
    ("geoadd", &["RW update"]),
    ("geodist", &["RO access"]),
    ("geohash", &["RO access"]),
    ("geopos", &["RO access"]),
    ("georadius", &["RO access", "OW update", "OW update"]),
    ("georadius_ro", &["RO access"]),
    (
        "georadiusbymember",
        &["RO access", "OW update", "OW update"],
    ),
    ("georadiusbymember_ro", &["RO access"]),
    ("geosearch", &["RO access"]),
    ("geosearchstore", &["OW update", "RO access"]),
    ("get", &["RO access"]),
    ("getbit", &["RO access"]),
    ("getdel", &["RW access delete"]),
    ("getex", &["RW access update"]),
    ("getrange", &["RO access"]),
    ("getset", &["RW access update"]),
    ("hdel", &["RW delete"]),
    ("hexists", &["RO"]),
    ("hget", &["RO access"]),
    ("hgetall", &["RO access"]),
    ("hincrby", &["RW access update"]),
    ("hincrbyfloat", &["RW access update"]),
    ("hkeys", &["RO access"]),
    ("hlen", &["RO"]),
    ("hmget", &["RO access"]),
    ("hmset", &["RW update"]),
    ("hrandfield", &["RO access"]),
    ("hscan", &["RO access"]),
    ("hset", &["RW update"]),
    ("hsetnx", &["RW insert"]),
    ("hstrlen", &["RO"]),
    ("hvals", &["RO access"]),
    ("incr", &["RW access update"]),
    ("incrby", &["RW access update"]),
    ("incrbyfloat", &["RW access update"]),
    ("lcs", &["RO access"]),
    ("lindex", &["RO access"]),
    ("linsert", &["RW insert"]),
    ("llen", &["RO"]),
    ("lmove", &["RW access delete", "RW insert"]),
    ("lmpop", &["RW access delete"]),
    ("lpop", &["RW access delete"]),
    ("lpos", &["RO access"]),
    ("lpush", &["RW insert"]),
    ("lpushx", &["RW insert"]),
    ("lrange", &["RO access"]),
    ("lrem", &["RW delete"]),
    ("lset", &["RW update"]),
    ("ltrim", &["RW delete"]),
    ("memory|usage", &["RO"]),
    ("mget", &["RO access"]),
    ("migrate", &["RW access delete"]),
    ("move", &["RW access update"]),
    ("mset", &["OW update"]),
    ("msetnx", &["OW insert"]),
    ("object|encoding", &["RO"]),
    ("object|freq", &["RO"]),
    ("object|idletime", &["RO"]),
    ("object|refcount", &["RO"]),
    ("persist", &["RW update"]),
    ("pexpire", &["RW update"]),
    ("pexpireat", &["RW update"]),
    ("pexpiretime", &["RO access"]),
    ("pfadd", &["RW insert"]),
    ("pfcount", &["RW access"]),
    ("pfdebug", &["RW access"]),
    ("pfmerge", &["RW access insert", "RO access"]),
    ("psetex", &["OW update"]),
    ("pttl", &["RO access"]),
    ("rename", &["RW access delete", "OW update"]),
    ("renamenx", &["RW access delete", "OW insert"]),
    ("restore", &["OW update"]),
    ("restore-asking", &["OW update"]),
    ("rpop", &["RW access delete"]),
    ("rpoplpush", &["RW access delete", "RW insert"]),
    ("rpush", &["RW insert"]),
    ("rpushx", &["RW insert"]),
    ("sadd", &["RW insert"]),
    ("scard", &["RO"]),
    ("sdiff", &["RO access"]),
    ("sdiffstore", &["OW update", "RO access"]),
    ("set", &["RW access update variable_flags"]),
    ("setbit", &["RW access update"]),
    ("setex", &["OW update"]),
    ("setnx", &["OW insert"]),
    ("setrange", &["RW update"]),
    ("sinter", &["RO access"]),
    ("sintercard", &["RO access"]),
    ("sinterstore", &["RW update", "RO access"]),
    ("sismember", &["RO"]),
    ("smembers", &["RO access"]),
    ("smismember", &["RO access"]),
    ("smove", &["RW access delete", "RW insert"]),
    ("sort", &["RO access", "OW update"]),
    ("sort_ro", &["RO access", "RO access"]),
    ("spop", &["RW access delete"]),
    ("spublish", &["not_key"]),
    ("srandmember", &["RO access"]),
    ("srem", &["RW delete"]),
    ("sscan", &["RO access"]),
    ("ssubscribe", &["not_key"]),
    ("strlen", &["RO"]),
    ("substr", &["RO access"]),
    ("sunion", &["RO access"]),
    ("sunionstore", &["OW update", "RO access"]),
    ("sunsubscribe", &["not_key"]),
    ("touch", &["RO"]),
    ("ttl", &["RO access"]),
    ("type", &["RO"]),
    ("unlink", &["RM delete"]),
    ("watch", &["RO"]),
    ("xack", &["RW update"]),
    ("xadd", &["RW update"]),
    ("xautoclaim", &["RW delete"]),
    ("xclaim", &["RW update"]),
    ("xdel", &["RW delete"]),
    ("xgroup|create", &["RW insert"]),
    ("xgroup|createconsumer", &["RW insert"]),
    ("xgroup|delconsumer", &["RW delete"]),
    ("xgroup|destroy", &["RW delete"]),
    ("xgroup|setid", &["RW update"]),
    ("xinfo|consumers", &["RO access"]),
    ("xinfo|groups", &["RO access"]),
    ("xinfo|stream", &["RO access"]),
    ("xlen", &["RO"]),
    ("xpending", &["RO access"]),
    ("xrange", &["RO access"]),
    ("xread", &["RO access"]),
    ("xreadgroup", &["RO access"]),
    ("xrevrange", &["RO access"]),
    ("xsetid", &["RW update"]),
    ("xtrim", &["RW delete"]),
    ("zadd", &["RW update"]),
    ("zcard", &["RO"]),
    ("zcount", &["RO access"]),
    ("zdiff", &["RO access"]),
    ("zdiffstore", &["OW update", "RO access"]),
    ("zincrby", &["RW access update"]),
    ("zinter", &["RO access"]),
    ("zintercard", &["RO access"]),
    ("zinterstore", &["OW update", "RO access"]),
    ("zlexcount", &["RO access"]),
    ("zmpop", &["RW access delete"]),
    ("zmscore", &["RO access"]),
    ("zpopmax", &["RW access delete"]),
    ("zpopmin", &["RW access delete"]),
    ("zrandmember", &["RO access"]),
    ("zrange", &["RO access"]),
    ("zrangebylex", &["RO access"]),
    ("zrangebyscore", &["RO access"]),
    ("zrangestore", &["OW update", "RO access"]),
    ("zrank", &["RO access"]),
    ("zrem", &["RW delete"]),
    ("zremrangebylex", &["RW delete"]),
    ("zremrangebyrank", &["RW delete"]),
    ("zremrangebyscore", &["RW delete"]),
    ("zrevrange", &["RO access"]),
    ("zrevrangebylex", &["RO access"]),
    ("zrevrangebyscore", &["RO access"]),
    ("zrevrank", &["RO access"]),
    ("zscan", &["RO access"]),
    ("zscore", &["RO access"]),
    ("zunion", &["RO access"]),
    ("zunionstore", &["OW update", "RO access"]),
];

/// The flags of each of `keys_count` keys of `spec` in the command line
/// `args` (its name first), in order.
pub fn key_flags(spec: &Spec, args: &[Bytes], keys_count: usize) -> Vec<Vec<&'static str>> {
    key_flag_words(spec, spec_flags(spec), args, keys_count)
        .map(|flags| flags.split(' ').collect())
        .collect()
}

/// The flags of `spec`'s key specs, in order; none for a command of
/// keel's own. (The command table keeps them by id.)
pub fn spec_flags(spec: &Spec) -> &'static [&'static str] {
    KEY_SPEC_FLAGS
        .binary_search_by(|(name, _)| name.cmp(&spec.name))
        .map_or(&[], |at| KEY_SPEC_FLAGS[at].1)
}

/// [`key_flags`] as one space-separated string per key, from the key
/// specs' flags `specs` ([`spec_flags`]), without allocating: the ACL
/// check reads them on every command of a restricted user.
pub fn key_flag_words<'a>(
    spec: &'a Spec,
    specs: &'static [&'static str],
    args: &'a [Bytes],
    keys_count: usize,
) -> impl Iterator<Item = &'static str> + 'a {
    let fallback = if spec.has_flag("write") {
        "RW access update"
    } else {
        "RO access"
    };
    (0..keys_count).map(
        move |i| match specs.get(i.min(specs.len().saturating_sub(1))) {
            Some(flags) => match flags.strip_suffix(" variable_flags") {
                Some(most) => variable_flags(spec.name, args).unwrap_or(most),
                None => flags,
            },
            None => fallback,
        },
    )
}

/// The flags of a key spec Redis marks `variable_flags`: SET overwrites
/// unless it has GET (then reads too); BITFIELD only reads when every
/// operation is a GET.
fn variable_flags(command: &str, args: &[Bytes]) -> Option<&'static str> {
    let options = args.get(3..).unwrap_or_default();
    match command {
        "set" if !options.iter().any(|a| is(a, "get")) => Some("OW update"),
        "bitfield" if !options.iter().any(|a| is(a, "set") || is(a, "incrby")) => Some("RO access"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(KEY_SPEC_FLAGS.windows(2).all(|w| w[0].0 < w[1].0));
    }
}

"""Differential test: the same random command stream goes to keel-server and to a
real redis-server, and every reply must be identical.

Both servers are started here, whatever --server says. The stream is generated
from a seed: set KEEL_DIFF_SEED to replay a run (the seed is printed on
failure) and KEEL_DIFF_COMMANDS to change its length (default 100000).

Only inherent nondeterminism is normalised: TTL-like replies are compared with
a small tolerance, and KEYS output and the members of sets and hashes (whose
order Redis's hash tables do not define) are sorted. Commands whose replies depend on
time, memory layout or randomness (RANDOMKEY, SCAN and its HSCAN/SSCAN/ZSCAN
forms, SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER, TIME, INFO, OBJECT IDLETIME,
MEMORY USAGE, CLIENT, DEBUG) are not generated, nor are blocking commands.
Commands are grouped into MULTI/EXEC (or DISCARD) blocks now and then, some
after a WATCH followed by a few commands that mostly name the watched keys, so
that EXEC fails or runs exactly where Redis counts a modification. Lex ranges are only sent to sorted sets whose scores are all
equal (Redis leaves them unspecified otherwise), SORT ... BY nosort replies are
compared as unordered (a set's order is its hash table's), and ZUNION/ZINTER and their
STORE forms take at most two inputs (Redis sums more in an order of its own, and floating
addition is not associative). To keep TTL
comparisons (EXPIRE ... GT/LT) independent of timing, every future expiry is
unique and at least tens of seconds away from any other one; past expiries are
used to exercise immediate deletion. Scripts (EVAL, EVAL_RO, EVALSHA) run a few
generated commands each through redis.pcall or redis.call and return their replies,
which are compared one by one as the commands' own; their keys are named in the
script, so most are keys the script did not declare.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import time
from collections import OrderedDict

import pytest

from support import OK, ConnectionClosed, Err, ServerProcess, Status, _b, encode_command

COMMANDS = int(os.environ.get("KEEL_DIFF_COMMANDS", "100000"))
BATCH = 500
MAX_REPORTED = 15

# Redis 7.0's SORT checks errno after strtod without clearing it first, so
# an ERANGE left by any earlier command (ZADD k 1e400) fails it.
SORT_ERRNO = ("Redis's SORT reads scores with strtod without clearing errno, so an ERANGE left by "
              "an earlier command (ZADD k 1e400) fails it")
# A SORT ... STORE that Redis fails this way still stores in keel, so the
# datasets part: every reply until keel gets Redis's dataset again may differ.
AFTER_SORT_STORE = "replies after a SORT ... STORE that only Redis refused, until keel is resynced"

# Deliberate differences between keel and Redis, as (reason, predicate). The
# predicate gets (command, keel reply, redis reply) and returns True when a
# divergence is this known one. Keep them narrow: a divergence that changes
# stored state makes every later reply suspect.
KNOWN_DIVERGENCES: list[tuple[str, object]] = [
    ("small sets of strings are listpacks in keel, as in Redis 7.2 (7.0 says hashtable)",
     lambda cmd, keel, redis: cmd[0].upper() == "OBJECT" and keel == b"listpack"
     and redis == b"hashtable"),
    ("an error quoting a key that is not UTF-8 shows it with invalid bytes replaced (keel's errors "
     "are text; Redis writes the key's raw bytes)",
     lambda cmd, keel, redis: isinstance(keel, Err) and isinstance(redis, Err) and keel != redis
     and redis.encode("utf-8", "surrogateescape").decode("utf-8", "replace") == str(keel)),
    ("DBSIZE counts a key that has expired and is not reclaimed yet, and the two servers reclaim "
     "at different moments (seen as one key in db 2, in about 1 run in 15 with scripts; the "
     "command that leaves it is not found yet)",
     lambda cmd, keel, redis: cmd[0].upper() == "DBSIZE" and isinstance(keel, int)
     and isinstance(redis, int) and abs(keel - redis) == 1),
    ("COMMAND alone lists each server's own command table",
     lambda cmd, keel, redis: [c.upper() for c in cmd] == ["COMMAND"]),
    (SORT_ERRNO,
     lambda cmd, keel, redis: cmd[0].upper() in ("SORT", "SORT_RO")
     and redis == Err("ERR One or more scores can't be converted into double")
     and not isinstance(keel, Err)),
]

# Replies compared with a tolerance: (command, tolerance).
TTL_TOLERANCE = {b"TTL": 2, b"EXPIRETIME": 2, b"PTTL": 2000, b"PEXPIRETIME": 2000}

pytestmark = [pytest.mark.differential, pytest.mark.timeout(900)]

INT64_MAX = "9223372036854775807"
INT64_MIN = "-9223372036854775808"


class CommandGenerator:
    """Seeded random commands over a small keyspace in three databases."""

    KEYS = [f"k{i}" for i in range(44)] + ["", "a b", "k*", "k?", "\xff\x00bin", "{tag}x"]
    GLOBS = ["*", "k1*", "k?", "k??", "*[0-3]", "k\\*", "[^k]*", "*b*", "k[1-2]?", "nomatch",
             "?", "a b", "*\\", "k[!1]", "k[3-1]"]
    STRINGS = ["", "abc", "hello world", "x" * 44, "y" * 45, "01", " 1", "1 ", "1.0", "nan",
               "inf", "\x00\xff", "-0", "+1", "0x10", "12345678901234567890"]
    FLOATS = ["1.5", "-0.25", "3e2", "0.1", "10.50", "1e-3", "-7", "5.0e3", "2.5e-1", "100"]
    BAD_NUMBERS = ["abc", "", "1.5", " 1", "9223372036854775808", "1e3"]

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.used_offsets = set()
        weights = {
            self.get: 10, self.set: 10, self.setnx: 2, self.setex: 2, self.getex: 3,
            self.getdel: 2, self.getset: 2, self.mget: 3, self.mset: 3, self.msetnx: 2,
            self.incr: 4, self.incrby: 4, self.incrbyfloat: 3, self.append: 3, self.strlen: 2,
            self.getrange: 3, self.setrange: 3, self.delete: 3, self.exists: 3, self.type: 2,
            self.keys: 1, self.rename: 2, self.touch: 1, self.object: 1, self.expire: 8,
            self.ttl: 6, self.persist: 2, self.select: 2, self.dbsize: 1, self.flush: 0.05,
            self.misc: 1, self.unknown: 0.3,
            self.hash_cmd: 12, self.set_cmd: 12, self.list_cmd: 12, self.zset_cmd: 14,
            self.lex_cmd: 3, self.copy: 1,
            self.bitmap_cmd: 12,
            self.dump_cmd: 2,
            self.geo_cmd: 8,
            self.hll_cmd: 6,
            self.server_cmd: 2,
            self.sort_cmd: 6,
            self.misc2_cmd: 5,
            self.pubsub_client_cmd: 2,
            self.stream_cmd: 10,
        }
        # What scripts run: any command but another script.
        self.inner_makers, self.inner_weights = list(weights), list(weights.values())
        weights[self.script_cmd] = 4
        self.makers = list(weights)
        self.weights = list(weights.values())
        self.scripted = {}  # script body or SHA1 -> the commands the script runs
        self.recent_scripts = []  # the last bodies EVAL sent
        self.watched = []  # keys that commands between WATCH and MULTI favour

    # -- building blocks -------------------------------------------------------------
    def key(self):
        if self.watched and self.rng.random() < 0.5:
            return self.rng.choice(self.watched)
        return self.rng.choice(self.KEYS)

    def keys_list(self, lo=1, hi=5):
        return [self.key() for _ in range(self.rng.randint(lo, hi))]

    def value(self):
        r = self.rng.random()
        if r < 0.45:
            return str(self.rng.randint(-100, 10_000))
        if r < 0.5:
            return self.rng.choice([INT64_MAX, INT64_MIN, "9223372036854775806", "-1", "0"])
        if r < 0.65:
            return self.rng.choice(self.FLOATS)
        return self.rng.choice(self.STRINGS)

    def integer(self, lo=-1000, hi=1000):
        r = self.rng.random()
        if r < 0.9:
            return str(self.rng.randint(lo, hi))
        if r < 0.95:
            return self.rng.choice([INT64_MAX, INT64_MIN, "-1", "0"])
        return self.rng.choice(self.BAD_NUMBERS)

    def name(self, name):
        """Command names in random letter case."""
        return self.rng.choice([name.upper(), name.lower(), name.capitalize()])

    def _offset(self):
        """A unique future offset in seconds, a multiple of 100 (>= 1000)."""
        while True:
            u = self.rng.randrange(10, 10_000_000)
            if u not in self.used_offsets:
                self.used_offsets.add(u)
                return 100 * u

    def future(self, unit):
        """A future expiry for an option in `unit`: EX, PX, EXAT or PXAT."""
        s = self._offset()
        if unit == "EX":
            return str(s)
        if unit == "PX":
            return str((s + 25) * 1000)
        if unit == "EXAT":
            return str(int(time.time()) + s + 50)
        return str(int(time.time() * 1000) + (s + 75) * 1000)

    def past(self, unit):
        if unit in ("EX", "PX"):
            return self.rng.choice(["0", "-1", "-100"])
        if unit == "EXAT":
            return self.rng.choice(["0", "1", str(int(time.time()) - 10)])
        return self.rng.choice(["1", str(int(time.time() * 1000) - 10_000)])

    def time_arg(self, unit, past=True):
        r = self.rng.random()
        if r < 0.8:
            return self.future(unit)
        if r < 0.92:
            return self.past(unit) if past else self.future(unit)
        if r < 0.96:
            return self.rng.choice([INT64_MAX, INT64_MIN, "9223372036854775"])
        return self.rng.choice(self.BAD_NUMBERS)

    # -- commands ------------------------------------------------------------------------
    def get(self):
        return ["GET", self.key()]

    def set(self):
        args = ["SET", self.key(), self.value()]
        options = []
        if self.rng.random() < 0.3:
            options.append(self.rng.choice(["NX", "XX"]))
        if self.rng.random() < 0.2:
            options.append("GET")
        if self.rng.random() < 0.4:
            unit = self.rng.choice(["EX", "PX", "EXAT", "PXAT", "KEEPTTL"])
            # No past EXAT/PXAT here: Redis 7.0 then keeps a logically expired key that
            # DBSIZE counts until its background expiry runs, which is timing-dependent.
            options += [unit] if unit == "KEEPTTL" else [unit, self.time_arg(unit, past=False)]
        if self.rng.random() < 0.05:
            options.append(self.rng.choice(["NX", "XX", "EX", "KEEPTTL", "FOO", "PXAT"]))
        self.rng.shuffle(options)
        return [self.name("SET")] + args[1:] + options

    def setnx(self):
        return [self.name("SETNX"), self.key(), self.value()]

    def setex(self):
        cmd, unit = self.rng.choice([("SETEX", "EX"), ("PSETEX", "PX")])
        return [self.name(cmd), self.key(), self.time_arg(unit), self.value()]

    def getex(self):
        r = self.rng.random()
        if r < 0.3:
            return ["GETEX", self.key()]
        if r < 0.45:
            return ["GETEX", self.key(), "PERSIST"]
        unit = self.rng.choice(["EX", "PX", "EXAT", "PXAT"])
        args = ["GETEX", self.key(), unit, self.time_arg(unit)]
        if self.rng.random() < 0.1:
            args.append(self.rng.choice(["PERSIST", "EX", "FOO"]))
        return args

    def getdel(self):
        return ["GETDEL", self.key()]

    def getset(self):
        return ["GETSET", self.key(), self.value()]

    def mget(self):
        return ["MGET"] + self.keys_list(1, 8)

    def mset(self):
        return ["MSET"] + [x for k in self.keys_list(1, 5) for x in (k, self.value())]

    def msetnx(self):
        return ["MSETNX"] + [x for k in self.keys_list(1, 3) for x in (k, self.value())]

    def incr(self):
        return [self.name(self.rng.choice(["INCR", "DECR"])), self.key()]

    def incrby(self):
        return [self.name(self.rng.choice(["INCRBY", "DECRBY"])), self.key(), self.integer()]

    def incrbyfloat(self):
        r = self.rng.random()
        amount = (self.rng.choice(self.FLOATS) if r < 0.6 else
                  str(self.rng.randint(-50, 50)) if r < 0.9 else
                  self.rng.choice(["abc", "", "nan", "inf", "-inf", "1 "]))
        return ["INCRBYFLOAT", self.key(), amount]

    def append(self):
        return ["APPEND", self.key(), self.rng.choice(["", "x", "12", "abc", "\x00"])]

    def strlen(self):
        return ["STRLEN", self.key()]

    def getrange(self):
        return ["GETRANGE", self.key(), self.integer(-20, 20), self.integer(-20, 20)]

    def setrange(self):
        r = self.rng.random()
        offset = (str(self.rng.randint(0, 60)) if r < 0.9 else
                  self.rng.choice(["-1", "536870912", INT64_MAX, "abc"]))
        return ["SETRANGE", self.key(), offset, self.rng.choice(["", "x", "hello", "123"])]

    def delete(self):
        return [self.rng.choice(["DEL", "UNLINK"])] + self.keys_list(1, 4)

    def exists(self):
        return ["EXISTS"] + self.keys_list(1, 4)

    def type(self):
        return ["TYPE", self.key()]

    def keys(self):
        return ["KEYS", self.rng.choice(self.GLOBS)]

    def rename(self):
        return [self.rng.choice(["RENAME", "RENAMENX"]), self.key(), self.key()]

    def touch(self):
        return ["TOUCH"] + self.keys_list(1, 4)

    def object(self):
        sub = self.rng.choice(["ENCODING", "ENCODING", "ENCODING", "FREQ", "NOSUCH"])
        return ["OBJECT", sub, self.key()]

    def expire(self):
        cmd, unit = self.rng.choice([("EXPIRE", "EX"), ("PEXPIRE", "PX"),
                                     ("EXPIREAT", "EXAT"), ("PEXPIREAT", "PXAT")])
        args = [self.name(cmd), self.key(), self.time_arg(unit)]
        r = self.rng.random()
        if r < 0.5:
            args.append(self.rng.choice(["NX", "XX", "GT", "LT", "nx", "gt"]))
        elif r < 0.6:
            args += self.rng.sample(["NX", "XX", "GT", "LT", "FOO"], 2)
        return args

    def ttl(self):
        return [self.rng.choice(["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"]), self.key()]

    def persist(self):
        return ["PERSIST", self.key()]

    def select(self):
        r = self.rng.random()
        db = (str(self.rng.randint(0, 2)) if r < 0.9 else
              self.rng.choice(["15", "16", "-1", "abc"]))
        return ["SELECT", db]

    def dbsize(self):
        return ["DBSIZE"]

    def flush(self):
        return [self.rng.choice(["FLUSHDB", "FLUSHDB", "FLUSHALL"])] + \
            self.rng.choice([[], ["SYNC"], ["ASYNC"], ["FOO"]])

    def misc(self):
        return self.rng.choice([
            ["PING"], ["PING", self.value()], ["ECHO", self.value()], ["PING", "a", "b"],
            ["CONFIG", "GET", "timeout"], ["EXISTS"], ["GET"],
        ])

    def unknown(self):
        return [self.rng.choice(["NOSUCH", "GETT", "foo", "SETT"])] + self.keys_list(0, 3)


    # -- collections -----------------------------------------------------------------
    FIELDS = ["f0", "f1", "f2", "f3", "f4", "f5", "long" * 20, "", "1", "2"]
    MEMBERS = ["a", "b", "c", "d", "e", "1", "2", "10", "-3", "x" * 70, ""]
    SCORES = ["1", "-2", "0.5", "3", "1.5", "-inf", "+inf", "10", "2.5", "0", "-0", "7"]
    LEX_KEYS = ["zl0", "zl1", "zl2"]
    GEO_KEYS = ["geo0", "geo1", "geo2"]

    def field(self):
        return self.rng.choice(self.FIELDS)

    def member(self):
        return self.rng.choice(self.MEMBERS)

    def members(self, lo=1, hi=4):
        return [self.member() for _ in range(self.rng.randint(lo, hi))]

    def score(self):
        r = self.rng.random()
        if r < 0.95:
            return self.rng.choice(self.SCORES)
        return self.rng.choice(["abc", "nan", "", "(1", "1e400"])

    def score_bound(self):
        r = self.rng.random()
        if r < 0.9:
            return self.rng.choice(["", "("]) + self.rng.choice(self.SCORES)
        return self.rng.choice(["abc", "[1", "nan", "(", ""])

    def lex_bound(self):
        r = self.rng.random()
        if r < 0.9:
            return self.rng.choice(["-", "+", "[" + self.member(), "(" + self.member()])
        return self.rng.choice(["a", "", "--", "+a"])

    def hash_cmd(self):
        k = self.key()
        return self.rng.choice([
            lambda: ["HSET", k] + [x for _ in range(self.rng.randint(1, 3))
                                   for x in (self.field(), self.value())],
            lambda: ["HSETNX", k, self.field(), self.value()],
            lambda: ["HGET", k, self.field()],
            lambda: ["HMGET", k] + [self.field() for _ in range(3)],
            lambda: ["HDEL", k] + [self.field() for _ in range(2)],
            lambda: ["HEXISTS", k, self.field()],
            lambda: ["HLEN", k],
            lambda: ["HSTRLEN", k, self.field()],
            lambda: ["HINCRBY", k, self.field(), self.integer(-100, 100)],
            lambda: ["HINCRBYFLOAT", k, self.field(), self.rng.choice(self.FLOATS + ["x"])],
            lambda: [self.rng.choice(["HGETALL", "HKEYS", "HVALS"]), k],
        ])()

    def pubsub_client_cmd(self):
        """Publishing with nobody subscribed, PUBSUB's counts, and CLIENT and
        LATENCY subcommands given bad input only (a real pause or REPLY OFF
        would stop the comparison)."""
        channel = self.rng.choice(["ch", "s1", "", "a b"])
        return self.rng.choice([
            lambda: [self.rng.choice(["PUBLISH", "SPUBLISH"]), channel, self.value()],
            lambda: ["PUBSUB", self.rng.choice(["CHANNELS", "SHARDCHANNELS"])]
            + self.rng.choice([[], [self.rng.choice(self.GLOBS)]]),
            lambda: ["PUBSUB", self.rng.choice(["NUMSUB", "SHARDNUMSUB"]), channel, "s2"],
            lambda: ["PUBSUB", "NUMPAT"],
            lambda: ["CLIENT", "REPLY", self.rng.choice(["MAYBE", "", "ONN"])],
            lambda: ["CLIENT", "PAUSE", self.rng.choice(["-1", "abc", "1.5"])]
            + self.rng.choice([[], ["WRITE"], ["READ"]]),
            lambda: ["CLIENT", "UNBLOCK", self.rng.choice(["abc", "-1", "0", "99999999"])]
            + self.rng.choice([[], ["TIMEOUT"], ["ERROR"], ["LATER"]]),
            lambda: ["CLIENT", "NO-EVICT", self.rng.choice(["on", "off", "maybe"])],
            lambda: ["LATENCY", self.rng.choice(["LATEST", "RESET"])],
            lambda: ["LATENCY", "HISTORY", self.rng.choice(["command", "nosuch"])],
        ])()

    def set_cmd(self):
        k = self.key()
        return self.rng.choice([
            lambda: ["SADD", k] + self.members(),
            lambda: ["SADD", k] + [str(self.rng.randint(-5, 20)) for _ in range(3)],
            lambda: ["SREM", k] + self.members(),
            lambda: ["SISMEMBER", k, self.member()],
            lambda: ["SMISMEMBER", k] + self.members(),
            lambda: ["SMEMBERS", k],
            lambda: ["SCARD", k],
            lambda: ["SMOVE", k, self.key(), self.member()],
            lambda: [self.rng.choice(["SINTER", "SUNION", "SDIFF"])] + self.keys_list(1, 3),
            lambda: [self.rng.choice(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"])]
            + self.keys_list(2, 4),
            lambda: ["SINTERCARD", "2"] + self.keys_list(2, 2)
            + self.rng.choice([[], ["LIMIT", str(self.rng.randint(0, 3))]]),
        ])()

    # Directives keel accepts with Redis's checks, and values valid or not.
    CONFIG_VALUES = {
        "hz": ["5", "10", "0", "-1", "x"], "save": ["", "100 10", "0 1", "60"],
        "appendfsync": ["always", "EVERYSEC", "never"], "activerehashing": ["yes", "no", "1"],
        "auto-aof-rewrite-min-size": ["64mb", "1k", "-1", "lots"],
        "shutdown-on-sigterm": ["default", "now nosave", "later"],
        "lua-time-limit": ["5000", "-5"], "slave-priority": ["100", "7"],
        "oom-score-adj": ["no", "relative", "absolute", "maybe"],
    }

    def server_cmd(self):
        name = self.rng.choice(list(self.CONFIG_VALUES))
        keyed = self.rng.choice([self.hash_cmd, self.set_cmd, self.zset_cmd, self.get,
                                 self.set, self.mset, self.rename, self.getdel])
        return self.rng.choice([
            lambda: ["CONFIG", "SET", name, self.rng.choice(self.CONFIG_VALUES[name])],
            lambda: ["CONFIG", "GET", name],
            lambda: ["CONFIG", "GET", self.rng.choice(["*ziplist*", "slave-*", "repl-*",
                                                       "*aof*", "nosuch"])],
            lambda: ["COMMAND", self.rng.choice(["GETKEYS", "GETKEYSANDFLAGS"])] + keyed(),
            # Redis blocks a WAIT for replicas it does not have: ask for none.
            lambda: ["WAIT", self.rng.choice(["0", "-1", "x"]), self.integer(0, 2)],
            lambda: ["LOLWUT"] + self.rng.choice([[], ["VERSION", self.integer(0, 4)]]),
        ])()

    def list_cmd(self):
        k = self.key()
        return self.rng.choice([
            lambda: [self.rng.choice(["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]), k] + self.members(),
            lambda: [self.rng.choice(["LPOP", "RPOP"]), k]
            + self.rng.choice([[], [str(self.rng.randint(0, 4))], ["-1"]]),
            lambda: ["LLEN", k],
            lambda: ["LRANGE", k, self.integer(-6, 6), self.integer(-6, 6)],
            lambda: ["LINDEX", k, self.integer(-6, 6)],
            lambda: ["LSET", k, self.integer(-4, 4), self.member()],
            lambda: ["LINSERT", k, self.rng.choice(["BEFORE", "AFTER", "bad"]), self.member(),
                     self.member()],
            lambda: ["LREM", k, self.integer(-2, 2), self.member()],
            lambda: ["LTRIM", k, self.integer(-5, 5), self.integer(-5, 5)],
            lambda: ["LPOS", k, self.member()]
            + self.rng.choice([[], ["RANK", "-1"], ["COUNT", "0"], ["RANK", "0"]]),
            lambda: ["LMOVE", k, self.key(), self.rng.choice(["LEFT", "RIGHT"]),
                     self.rng.choice(["LEFT", "RIGHT"])],
            lambda: ["RPOPLPUSH", k, self.key()],
        ])()

    def zset_cmd(self):
        k = self.key()
        flags = [f for f in ("NX", "XX", "GT", "LT", "CH", "INCR") if self.rng.random() < 0.1]
        pairs = 1 if "INCR" in flags else self.rng.randint(1, 3)
        withscores = self.rng.choice([[], ["WITHSCORES"]])
        limit = self.rng.choice([[], [], ["LIMIT", self.integer(-1, 3), self.integer(-2, 3)]])
        return self.rng.choice([
            lambda: ["ZADD", k] + flags + [x for _ in range(pairs)
                                           for x in (self.score(), self.member())],
            lambda: ["ZINCRBY", k, self.score(), self.member()],
            lambda: ["ZREM", k] + self.members(),
            lambda: ["ZSCORE", k, self.member()],
            lambda: ["ZMSCORE", k] + self.members(),
            lambda: ["ZCARD", k],
            lambda: [self.rng.choice(["ZRANK", "ZREVRANK"]), k, self.member()],
            lambda: [self.rng.choice(["ZRANGE", "ZREVRANGE"]), k, self.integer(-5, 5),
                     self.integer(-5, 5)] + withscores,
            lambda: ["ZRANGE", k, self.score_bound(), self.score_bound(), "BYSCORE"]
            + self.rng.choice([[], ["REV"]]) + withscores + limit,
            lambda: [self.rng.choice(["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]), k,
                     self.score_bound(), self.score_bound()] + withscores + limit,
            lambda: ["ZCOUNT", k, self.score_bound(), self.score_bound()],
            lambda: ["ZREMRANGEBYSCORE", k, self.score_bound(), self.score_bound()],
            lambda: ["ZREMRANGEBYRANK", k, self.integer(-5, 5), self.integer(-5, 5)],
            lambda: [self.rng.choice(["ZPOPMIN", "ZPOPMAX"]), k]
            + self.rng.choice([[], [str(self.rng.randint(0, 3))], ["-1"]]),
            lambda: [self.rng.choice(["ZUNIONSTORE", "ZINTERSTORE"]), self.key(),
                     self.rng.choice(["1", "2", "2", "0"]), k, self.key()]
            + self.rng.choice([[], ["WEIGHTS", "2", "-1"], ["AGGREGATE",
                                                              self.rng.choice(["MIN", "MAX", "SUM"])]]),
            lambda: [self.rng.choice(["ZUNION", "ZINTER"]), self.rng.choice(["1", "2", "2", "0"]),
                     k, self.key()]
            + self.rng.choice([[], ["WEIGHTS", "2", "-1"], ["AGGREGATE", "MIN"]]) + withscores,
            lambda: ["ZDIFF", "3", k, self.key(), self.key()] + withscores,
            lambda: ["ZDIFFSTORE", self.key(), "2", k, self.key()],
            lambda: ["ZINTERCARD", "2", k, self.key()]
            + self.rng.choice([[], ["LIMIT", str(self.rng.randint(0, 3))]]),
            lambda: ["ZRANGESTORE", self.key(), k, self.score_bound(), self.score_bound(), "BYSCORE"]
            + self.rng.choice([[], ["REV"]]) + limit,
            lambda: ["ZRANGESTORE", self.key(), k, self.integer(-5, 5), self.integer(-5, 5)],
        ])()

    # Payloads Redis 7.0.15 dumped (a list, an intset, a sorted set, a hash,
    # strings raw, int-encoded and compressed): every one dumps the same bytes
    # on both servers, so DUMP of DUMP_KEYS, which only RESTORE writes, compares.
    PAYLOADS = [
        b"\x12\x01\x02\x1c\x1c\x00\x00\x00\x07\x00\x81a\x02\x81b\x02\x01\x01\x02\x01\xc1,\x02\xdf\xfb"
        b"\x02\xf2p\x11\x01\x04\xff\n\x00\xde\x0e\xe6n\t\xffo\xca",
        b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mnM\x1b",
        b"\x11\xc3#,\r,\x00\x00\x00\x06\x00\x81c\x02\x930.10\xe0\x05\x00\x0f1\x14\x81a\x02\x831.5\x04"
        b"\x81b\x02\x02\x01\xff\n\x00\x85\x99\xb8]\xdaq\x83I",
        b"\x10\x12\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x0c\x01\xff\n\x00\x016\x94\x81"
        b"\xd3[\x89t",
        b"\x00\x05hello\n\x00cr\xdfve4 \n",
        b"\x00\xc190\n\x00\x9d\x94\xea\'\x93\xfc\x08\xb9",
        b"\x00\xc3\t\x19\x01aa\xe0\x0c\x00\x01aa\n\x00\xd0\x8dg\x00\x9b\x1b\x83\xb3",
    ]
    DUMP_KEYS = ["dump0", "dump1", "dump2"]

    def dump_cmd(self):
        """RESTORE of Redis-made payloads (some corrupted) with its options,
        DUMP of keys only RESTORE wrote, and MIGRATE's paths that need no
        target."""
        k = self.rng.choice(self.DUMP_KEYS) if self.rng.random() < 0.6 else self.key()
        r = self.rng.random()
        if r < 0.25:
            return ["DUMP", self.rng.choice(self.DUMP_KEYS)]
        if r < 0.35:
            options = self.rng.choice([[], ["COPY"], ["REPLACE"], ["BOGUS"], ["AUTH"], ["KEYS", k]])
            return ["MIGRATE", "127.0.0.1", "1", self.rng.choice([k, ""]), "0", "100"] + options
        payload = self.rng.choice(self.PAYLOADS)
        if self.rng.random() < 0.1:
            payload = payload[:-1] + bytes([payload[-1] ^ 1])
        ttl = self.rng.choice(["0", "0", "100000", "-1", "x"])
        options = self.rng.sample(["REPLACE", "ABSTTL", "IDLETIME", "FREQ", "BOGUS"], self.rng.randint(0, 2))
        args = []
        for option in options:
            args += [option] + ({"IDLETIME": [self.integer(-1, 100)], "FREQ": [self.integer(-1, 300)]}
                                .get(option, []))
        if "ABSTTL" in options and ttl == "100000":
            ttl = "1"
        return ["RESTORE", k, ttl, payload] + args

    STREAM_KEYS = ["st0", "st1", "st2"]

    def stream_cmd(self):
        """Streams and consumer groups, with explicit IDs only and no reply
        that shows a time (idle times, XINFO STREAM's tree sizes)."""
        rng = self.rng
        k = rng.choice(self.STREAM_KEYS) if rng.random() < 0.9 else self.key()

        def sid(forms=("ms", "ms-seq", "ms-seq", "bad")):
            form = rng.choice(forms)
            ms, seq = rng.randint(0, 40), rng.randint(0, 3)
            return {"ms": str(ms), "ms-seq": f"{ms}-{seq}", "ms-*": f"{ms}-*",
                    "bad": rng.choice(["x", "1-x", "", "-1", "18446744073709551616"])}[form]

        def bound():
            return rng.choice(["-", "+", sid(), "(" + sid(("ms", "ms-seq")), sid(("ms",))])

        def trim():
            strategy = rng.choice([["MAXLEN", str(rng.randint(0, 12))], ["MINID", sid(("ms", "ms-seq"))]])
            op = rng.choice([[], ["="], ["~"]])
            limit = ["LIMIT", str(rng.randint(0, 5))] if op == ["~"] and rng.random() < 0.3 else []
            return strategy[:1] + op + strategy[1:] + limit

        group, consumer = rng.choice(["g1", "g2", "nog"]), rng.choice(["c1", "c2", "c3"])
        fields = [self.field(), self.value()] * rng.randint(1, 2)
        return rng.choice([
            lambda: ["XADD", k] + (["NOMKSTREAM"] if rng.random() < 0.1 else [])
            + (trim() if rng.random() < 0.3 else []) + [sid(("ms", "ms-seq", "ms-*", "ms-seq"))] + fields,
            lambda: ["XLEN", k],
            lambda: [rng.choice(["XRANGE", "XREVRANGE"]), k, bound(), bound()]
            + rng.choice([[], ["COUNT", self.integer(-1, 4)]]),
            lambda: ["XDEL", k] + [sid() for _ in range(rng.randint(1, 3))],
            lambda: ["XTRIM", k] + trim(),
            lambda: ["XSETID", k, sid()] + rng.choice([[], ["ENTRIESADDED", self.integer(0, 50)],
                                                       ["MAXDELETEDID", sid()]]),
            lambda: ["XREAD"] + rng.choice([[], ["COUNT", self.integer(0, 3)]])
            + ["STREAMS", k, rng.choice(["$", sid(), "0"])],
            lambda: ["XGROUP", "CREATE", k, group, rng.choice(["$", "0", sid()])]
            + rng.choice([[], ["MKSTREAM"], ["ENTRIESREAD", self.integer(-2, 10)]]),
            lambda: ["XGROUP", "SETID", k, group, rng.choice(["$", "0", sid()])],
            lambda: ["XGROUP", rng.choice(["CREATECONSUMER", "DELCONSUMER"]), k, group, consumer],
            lambda: ["XGROUP", "DESTROY", k, group],
            lambda: ["XREADGROUP", "GROUP", group, consumer]
            + rng.choice([[], ["COUNT", self.integer(0, 3)]]) + rng.choice([[], ["NOACK"]])
            + ["STREAMS", k, rng.choice([">", ">", "0", sid()])],
            lambda: ["XACK", k, group] + [sid() for _ in range(rng.randint(1, 3))],
            lambda: ["XPENDING", k, group],
            lambda: ["XCLAIM", k, group, consumer, "0", sid(), sid()]
            + rng.choice([[], ["JUSTID"], ["FORCE", "JUSTID"], ["RETRYCOUNT", "3"], ["LASTID", sid()]]),
            lambda: ["XAUTOCLAIM", k, group, consumer, "0", bound()]
            + rng.choice([[], ["COUNT", self.integer(0, 3)], ["JUSTID"]]),
            lambda: ["XINFO", "GROUPS", k],
        ])()

    def geo_cmd(self):
        """GEO commands over the same keys as the sorted sets: points on a
        coarse grid (equal distances) or anywhere, at the limits or past
        them, and every search form with its options; mostly on keys of
        their own, now and then on any key."""
        geo_key = lambda: (self.rng.choice(self.GEO_KEYS) if self.rng.random() < 0.85  # noqa: E731
                           else self.key())
        k = geo_key()

        def coordinate(limit):
            r = self.rng.random()
            if r < 0.4:
                return str(self.rng.randint(-3, 3) * limit // 6)
            if r < 0.85:
                return f"{self.rng.uniform(-limit, limit):.6f}"
            return self.rng.choice([str(limit), f"-{limit}.06", "abc", "0x1p3", "inf", "85.05112878"])

        def point():
            return [coordinate(180), coordinate(85)]

        def shape():
            unit = self.rng.choice(["m", "km", "KM", "ft", "mi", "mi", "parsec"])
            size = lambda: self.rng.choice(  # noqa: E731
                ["0", "1", "50", "500", "5000", "20000", "-1", "abc", "1e7"])
            return self.rng.choice([["BYRADIUS", size(), unit], ["BYBOX", size(), size(), unit]])

        def origin():
            return self.rng.choice([["FROMMEMBER", self.member()], ["FROMLONLAT"] + point()])

        def options(store=False):
            chosen = [o for o in (["ASC"], ["DESC"], ["COUNT", self.integer(-1, 4)], ["ANY"])
                      if self.rng.random() < 0.25]
            if not store:
                chosen += [[o] for o in ("WITHDIST", "WITHHASH", "WITHCOORD") if self.rng.random() < 0.3]
            self.rng.shuffle(chosen)
            return [x for o in chosen for x in o]

        def radius():
            return [self.rng.choice(["1", "100", "1000", "5000", "-5", "x"]),
                    self.rng.choice(["km", "m", "mi", "yd"])]

        def store():
            return self.rng.choice([[], [], ["STORE", geo_key()], ["STOREDIST", geo_key()]])

        flags = [f for f in ("NX", "XX", "CH") if self.rng.random() < 0.1]
        return self.rng.choice([
            lambda: ["GEOADD", k] + flags + [x for _ in range(self.rng.randint(1, 3))
                                             for x in point() + [self.member()]],
            lambda: ["GEOPOS", k] + self.members(),
            lambda: ["GEOHASH", k] + self.members(),
            lambda: ["GEODIST", k, self.member(), self.member()]
            + self.rng.choice([[], ["km"], ["FT"], ["mi"], ["yd"]]),
            lambda: ["GEOSEARCH", k] + origin() + shape() + options(),
            lambda: ["GEOSEARCHSTORE", geo_key(), k] + origin() + shape() + options(True)
            + self.rng.choice([[], ["STOREDIST"]]),
            lambda: [self.rng.choice(["GEORADIUS", "GEORADIUS_RO"]), k] + point() + radius()
            + options(),
            lambda: ["GEORADIUS", k] + point() + radius() + options(True) + store(),
            lambda: [self.rng.choice(["GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"]), k,
                     self.member()] + radius() + options(),
            lambda: ["GEORADIUSBYMEMBER", k, self.member()] + radius() + options(True) + store(),
        ])()

    def lex_cmd(self):
        """Lex ranges, on sorted sets whose members all score 0."""
        k = self.rng.choice(self.LEX_KEYS)
        limit = self.rng.choice([[], ["LIMIT", self.integer(-1, 3), self.integer(-2, 3)]])
        return self.rng.choice([
            lambda: ["ZADD", k] + [x for m in self.members() for x in ("0", m)],
            lambda: ["ZRANGE", k, self.lex_bound(), self.lex_bound(), "BYLEX"]
            + self.rng.choice([[], ["REV"]]) + limit,
            lambda: [self.rng.choice(["ZRANGEBYLEX", "ZREVRANGEBYLEX"]), k, self.lex_bound(),
                     self.lex_bound()] + limit,
            lambda: ["ZLEXCOUNT", k, self.lex_bound(), self.lex_bound()],
            lambda: ["ZREMRANGEBYLEX", k, self.lex_bound(), self.lex_bound()],
            lambda: ["ZRANGE", k, "0", "-1"],
        ])()

    def hll_cmd(self):
        """HyperLogLogs, sparse and (with hundreds of elements) dense, on the shared keys, so
        SETRANGE and APPEND corrupt some: replies and the HLL bytes must match."""
        k = self.key()
        return self.rng.choice([
            lambda: ["PFADD", k] + self.members(0, 4),
            lambda: ["PFADD", k] + [f"e{self.rng.randrange(10**6)}"
                                    for _ in range(self.rng.choice([5, 50, 600]))],
            lambda: ["PFCOUNT", k] + self.keys_list(0, 2),
            lambda: ["PFMERGE", k] + self.keys_list(0, 3),
            lambda: ["GET", k],
            lambda: ["PFDEBUG", self.rng.choice(["ENCODING", "DECODE", "TODENSE", "nope"]), k],
        ])()

    def copy(self):
        return ["COPY", self.key(), self.key()] + self.rng.choice(
            [[], ["REPLACE"], ["DB", str(self.rng.randint(0, 2))], ["DB", "1", "REPLACE"]])

    def bitmap_cmd(self):
        k = self.key()
        r = self.rng.random()
        bit = (str(self.rng.randint(0, 200)) if r < 0.9 else
               self.rng.choice(["-1", "4294967296", INT64_MAX, "abc", "#1", "100000"]))
        ends = lambda: [self.integer(-30, 30), self.integer(-30, 30)]  # noqa: E731
        unit = lambda: self.rng.choice([[], ["BYTE"], ["BIT"], ["bit"], ["BITS"]])  # noqa: E731
        field = lambda: self.rng.choice(  # noqa: E731
            ["i1", "i5", "i8", "i16", "i63", "i64", "u1", "u7", "u8", "u32", "u63", "u64", "i65",
             "I8", "i0", "x"])
        offset = lambda: self.rng.choice(  # noqa: E731
            [str(self.rng.randint(0, 100)), f"#{self.rng.randint(0, 8)}", "-1", "#-1", "4294967296"])
        amount = lambda: self.rng.choice(  # noqa: E731
            [str(self.rng.randint(-300, 300)), INT64_MAX, INT64_MIN, "-1", "x"])

        def bitfield_ops():
            ops = []
            for _ in range(self.rng.randint(0, 4)):
                ops += self.rng.choice([
                    lambda: ["GET", field(), offset()],
                    lambda: [self.rng.choice(["SET", "INCRBY"]), field(), offset(), amount()],
                    lambda: ["OVERFLOW", self.rng.choice(["WRAP", "SAT", "fail", "nope"])],
                ])()
            return ops

        return self.rng.choice([
            lambda: ["SETBIT", k, bit, self.rng.choice(["0", "1", "1", "2", "-1", "x"])],
            lambda: ["GETBIT", k, bit],
            lambda: ["BITCOUNT", k] + self.rng.choice([[], ends() + unit(), [self.integer()]]),
            lambda: ["BITPOS", k, self.rng.choice(["0", "1", "1", "2", "x"])]
            + self.rng.choice([[], [self.integer(-30, 30)], ends(), ends() + unit()]),
            lambda: ["BITOP", self.rng.choice(["AND", "or", "XOR", "NOT", "nand"])]
            + self.keys_list(2, 4),
            lambda: ["BITFIELD", k] + bitfield_ops(),
            lambda: ["BITFIELD_RO", k] + bitfield_ops(),
        ])()

    def sort_cmd(self):
        """SORT and SORT_RO, ordering only what Redis orders deterministically:
        BY a pattern sorts numerically (equal scores are ordered by element),
        and BY nosort takes a LIMIT only into STORE (which sorts a set), its
        reply otherwise compared as unordered (a set's order is its hash's)."""
        name = self.rng.choice(["SORT", "SORT", "SORT_RO"])
        args = [name, self.key()]
        alpha = self.rng.random() < 0.3
        store = name == "SORT" and self.rng.random() < 0.3
        r = self.rng.random()
        by = ("nosort" if r < 0.15 else
              self.rng.choice(["k*", "*", "k*->f1", "k*->"]) if r < 0.35 and not alpha else None)
        args += ["BY", by] if by else []
        if (by != "nosort" or store) and self.rng.random() < 0.4:
            args += ["LIMIT", self.integer(-2, 4), self.integer(-2, 4)]
        for _ in range(self.rng.choice([0, 0, 1, 2])):
            args += ["GET", self.rng.choice(["#", "k*", "k*->f1", "*", "nokey"])]
        args += self.rng.choice([[], [], ["ASC"], ["DESC"]]) + (["ALPHA"] if alpha else [])
        args += ["STORE", self.key()] if store else []
        if self.rng.random() < 0.03:
            args.append(self.rng.choice(["LIMIT", "BY", "FOO", "STORE", "GET"]))
        return args

    def misc2_cmd(self):
        """LMPOP, ZMPOP, LCS, SUBSTR, MOVE and, rarely, SWAPDB."""
        k = self.key()
        count = self.rng.choice([[], [], ["COUNT", self.integer(-1, 4)]])
        numkeys = self.rng.choice(["1", "2", "2", "3", "0", "-1", "x"])
        return self.rng.choices([
            lambda: ["LMPOP", numkeys, k, self.key(), self.rng.choice(["LEFT", "RIGHT", "UP"])]
            + count,
            lambda: ["ZMPOP", numkeys, k, self.key(), self.rng.choice(["MIN", "MAX", "LEFT"])]
            + count,
            lambda: ["LCS", k, self.key()] + self.rng.choice([
                [], ["LEN"], ["IDX"], ["IDX", "WITHMATCHLEN"], ["LEN", "IDX"], ["FOO"],
                ["IDX", "MINMATCHLEN", self.rng.choice(["0", "2", "-1", "x"]), "WITHMATCHLEN"]]),
            lambda: ["SUBSTR", k, self.integer(-6, 6), self.integer(-6, 6)],
            lambda: ["MOVE", k, self.rng.choice(["0", "1", "2", "2", "16", "-1", "x"])],
            lambda: ["SWAPDB", self.rng.choice(["0", "1", "2"]),
                     self.rng.choice(["0", "1", "2", "x", "16"])],
        ], [5, 5, 4, 2, 4, 0.3])[0]()

    def script_cmd(self):
        """EVAL (now and then EVAL_RO) of a script that runs a few generated commands and
        returns their replies in a table, or EVALSHA of one sent lately (which keel may
        have dropped: see EvalScriptCache)."""
        declared = self.keys_list(0, 2) if self.rng.random() < 0.5 else []
        numkeys = [str(len(declared))] + declared
        if self.rng.random() < 0.2:
            sha = (hashlib.sha1(self.rng.choice(self.recent_scripts).encode()).hexdigest()
                   if self.recent_scripts else "0" * 40)
            return [self.name("EVALSHA"), sha] + numkeys
        call = self.rng.choice(["redis.pcall"] * 4 + ["redis.call"])
        inner = [self.command(self.inner_makers, self.inner_weights)
                 for _ in range(self.rng.randint(1, 4))]
        lines = [f"r[{i}] = {call}({', '.join(lua_string(arg) for arg in cmd)})"
                 for i, cmd in enumerate(inner, 1)]
        body = "local r = {}\n" + "\n".join(lines) + "\nreturn r"
        self.scripted[body] = self.scripted[hashlib.sha1(body.encode()).hexdigest()] = inner
        self.recent_scripts = (self.recent_scripts + [body])[-100:]
        return [self.name(self.rng.choice(["EVAL"] * 6 + ["EVAL_RO"])), body] + numkeys

    def block(self):
        """A MULTI block of a few commands, sometimes after a WATCH and a few
        commands on the watched keys, ended by EXEC or DISCARD (or left to a
        stray EXEC/MULTI now and then)."""
        head = []
        if self.rng.random() < 0.5:
            self.watched = self.keys_list(1, 2)
            head = [["WATCH"] + self.watched]
            head += [self.command() for _ in range(self.rng.randint(0, 3))]
            self.watched = []
        body = [self.command() for _ in range(self.rng.randint(0, 4))]
        end = self.rng.choice([["EXEC"]] * 8 + [["DISCARD"], ["MULTI"]])
        return head + [["MULTI"]] + body + [end] + ([["EXEC"]] if end == ["MULTI"] else [])

    def commands(self):
        """The next command, or now and then a MULTI block of several."""
        return self.block() if self.rng.random() < 0.01 else [self.command()]

    def command(self, makers=None, weights=None):
        maker = self.rng.choices(makers or self.makers, weights or self.weights)[0]
        cmd = maker()
        r = self.rng.random()
        if r < 0.02 and len(cmd) > 1:  # wrong arity: drop arguments
            cmd = cmd[: self.rng.randint(1, len(cmd) - 1)]
        elif r < 0.03:  # wrong arity: extra arguments
            cmd = cmd + ["extra"] * self.rng.randint(1, 2)
        return cmd


def lua_string(arg) -> str:
    """`arg`, sent as `encode_command` sends it, as a Lua string literal:
    letters and digits as they are, every other byte as a decimal escape."""
    return '"' + "".join(chr(b) if chr(b).isalnum() else f"\\{b:03}" for b in _b(arg)) + '"'


UNORDERED = {"KEYS", "SMEMBERS", "SINTER", "SUNION", "SDIFF", "HKEYS", "HVALS"}


def normalize(cmd, reply):
    name = cmd[0].upper()
    if name in UNORDERED and isinstance(reply, list):
        return sorted(reply)
    if (name in ("SORT", "SORT_RO") and isinstance(reply, list)
            and "nosort" in [a.lower() for a in cmd]):
        return sorted(reply, key=repr)
    if (name == "HGETALL" or cmd[:2] == ["CONFIG", "GET"]) and isinstance(reply, list):
        return sorted(zip(reply[::2], reply[1::2]))
    return reply


# What `divergence` returns for replies that differ in no known way.
UNKNOWN = "unknown"


NOSCRIPT = Err("NOSCRIPT No matching script. Please use EVAL.")
DROPPED_SCRIPT = ("keel keeps the 500 scripts EVAL brought that were used last, as Redis 7.4; "
                  "Redis 7.0 keeps every one")


class EvalScriptCache:
    """Which scripts keel's EVAL cache holds, replayed from keel's replies: the
    500 (MAX_EVAL_SCRIPTS in crates/script) that EVAL or EVALSHA used last.
    An EVALSHA that keel answers NOSCRIPT where Redis runs the script is the
    known divergence DROPPED_SCRIPT only if this model dropped it too."""

    BOUND = 500

    def __init__(self):
        self.by_last_use = OrderedDict()

    def saw(self, cmd, reply):
        """Feeds keel's reply to a command that ran (not one that was queued)."""
        name = cmd[0].upper()
        if name not in ("EVAL", "EVAL_RO", "EVALSHA") or len(cmd) < 3:
            return
        # These are answered before the script is looked up or compiled.
        if isinstance(reply, Err) and (reply == NOSCRIPT or reply.startswith("ERR Number of keys")):
            return
        sha = cmd[1] if name == "EVALSHA" else hashlib.sha1(_b(cmd[1])).hexdigest()
        self.by_last_use.pop(sha, None)
        self.by_last_use[sha] = None
        if len(self.by_last_use) > self.BOUND:
            self.by_last_use.popitem(last=False)

    def dropped(self, sha) -> bool:
        return sha not in self.by_last_use


def divergence(cmd, keel, redis, ran, scripts):
    """How keel's reply to `cmd` differs from Redis's: None if it does not,
    the reason if it is a known divergence, else UNKNOWN. `ran(cmd)` gives
    the commands an EXEC or a script ran: their replies are compared one by
    one, each as its own command's, and it diverges as its first diverging
    reply does. `scripts` is keel's EVAL cache as replayed so far."""
    queued = ran(cmd)
    if (queued and isinstance(keel, list) and isinstance(redis, list)
            and len(keel) == len(redis) == len(queued)):
        found = [divergence(q, k, r, ran, scripts) for q, k, r in zip(queued, keel, redis)]
        return UNKNOWN if UNKNOWN in found else next((f for f in found if f), None)
    keel, redis = normalize(cmd, keel), normalize(cmd, redis)
    if keel == redis and type(keel) is type(redis):
        return None
    if (cmd[0].upper() == "EVALSHA" and keel == NOSCRIPT and not isinstance(redis, Err)
            and scripts.dropped(cmd[1])):
        return DROPPED_SCRIPT
    tolerance = TTL_TOLERANCE.get(cmd[0].upper().encode())
    if tolerance is not None and isinstance(keel, int) and isinstance(redis, int):
        if keel >= 0 and redis >= 0 and abs(keel - redis) <= tolerance:
            return None
    for reason, predicate in KNOWN_DIVERGENCES:
        if predicate(cmd, keel, redis):
            return reason
    return UNKNOWN


@pytest.fixture(scope="module")
def both_servers(keel_bin):
    if not os.access(keel_bin, os.X_OK):
        pytest.skip(f"keel binary not found at {keel_bin}")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    servers = [ServerProcess("keel", keel_bin=keel_bin), ServerProcess("redis")]
    try:
        for srv in servers:
            srv.start()
        yield servers
    finally:
        for srv in servers:
            srv.cleanup()


def copy_dataset(source, target):
    """Gives `target` the keys of `source`'s three databases (DUMP and
    RESTORE), then selects the database `source` has selected on both."""
    selected = re.search(rb"\bdb=(\d+)", _b(source.call("CLIENT", "INFO"))).group(1)
    for db in range(3):
        for conn in (source, target):
            assert conn.call("SELECT", db) == OK
        assert target.call("FLUSHDB") == OK
        for key in source.call("KEYS", "*"):
            payload, ttl = source.call("DUMP", key), source.call("PTTL", key)
            if payload is not None and ttl != -2:
                assert target.call("RESTORE", key, max(ttl, 0), payload) == OK, key
    for conn in (source, target):
        assert conn.call("SELECT", selected) == OK


def test_random_commands_match_redis(both_servers):
    seed = int(os.environ.get("KEEL_DIFF_SEED") or random.randrange(2**32))
    print(f"KEEL_DIFF_SEED={seed}")
    gen = CommandGenerator(seed)
    keel_srv, redis_srv = both_servers
    keel, redis = keel_srv.conn(), redis_srv.conn()
    for conn in (keel, redis):
        conn.call("FLUSHALL")

    divergences, known, total = [], {}, 0
    queued = []  # commands queued by the current MULTI
    scripts = EvalScriptCache()
    exec_ran = []  # the commands the EXEC being compared ran

    def ran(cmd):
        """The commands `cmd` ran, to compare their replies one by one."""
        name = cmd[0].upper()
        if name == "EXEC":
            return exec_ran
        if name in ("EVAL", "EVAL_RO", "EVALSHA") and len(cmd) > 1:
            return gen.scripted.get(cmd[1], ())
        return ()

    in_multi = False
    apart = False  # a known divergence changed stored state (see AFTER_SORT_STORE)
    index = 0
    while index < COMMANDS:
        batch = [cmd for _ in range(min(BATCH, COMMANDS - index)) for cmd in gen.commands()]
        payload = b"".join(encode_command(*cmd) for cmd in batch)
        keel.send_raw(payload)
        redis.send_raw(payload)
        for offset, cmd in enumerate(batch):
            try:
                keel_reply = keel.read()
            except (ConnectionClosed, OSError) as exc:
                pytest.fail(f"KEEL_DIFF_SEED={seed}: keel connection failed at command "
                            f"#{index + offset} {cmd!r}: {exc!r}\n{keel_srv.log_tail()}")
            redis_reply = redis.read()
            name = cmd[0].upper()
            if keel_reply == Status("QUEUED"):
                queued.append(cmd)
            exec_ran[:] = queued if name == "EXEC" else []
            if name in ("EXEC", "DISCARD") or (name == "MULTI" and keel_reply == OK):
                queued = []
                in_multi = name == "MULTI"
            reason = divergence(cmd, keel_reply, redis_reply, ran, scripts)
            if reason is not None and apart:
                reason = AFTER_SORT_STORE
            elif reason == SORT_ERRNO and any(
                    "STORE" in (str(arg).upper() for arg in c) for c in (cmd, *ran(cmd))):
                apart = True
            if keel_reply != Status("QUEUED"):
                scripts.saw(cmd, keel_reply)
            if name == "EXEC" and isinstance(keel_reply, list):
                for queued_cmd, queued_reply in zip(exec_ran, keel_reply):
                    scripts.saw(queued_cmd, queued_reply)
            if reason is None:
                continue
            if reason != UNKNOWN:
                known[reason] = known.get(reason, 0) + 1
                continue
            total += 1
            if len(divergences) < MAX_REPORTED:
                divergences.append((index + offset, cmd, keel_reply, redis_reply))
        index += len(batch)
        if apart and not in_multi:
            copy_dataset(redis, keel)
            apart = False

    keel.close()
    redis.close()
    if known:
        print("known divergences:", known)
    if divergences:
        lines = [f"KEEL_DIFF_SEED={seed}: {total} of {COMMANDS} replies differ from Redis; first ones:"]
        for i, cmd, keel_reply, redis_reply in divergences:
            lines.append(f"  #{i} {cmd!r}\n      keel:  {keel_reply!r}\n      redis: {redis_reply!r}")
        pytest.fail("\n".join(lines), pytrace=False)


def test_generator_is_deterministic():
    """The same seed yields the same command stream (times aside)."""
    a, b = CommandGenerator(1234), CommandGenerator(1234)
    # Times (10 digits or more) left out, in scripts' bodies too.
    strip = lambda cmd: [re.sub(r"\d{10,}", "", x) if isinstance(x, str) else x for x in cmd]  # noqa: E731,E501
    assert [strip(a.command()) for _ in range(2000)] == [strip(b.command()) for _ in range(2000)]


def test_generator_covers_every_command():
    gen = CommandGenerator(99)
    names = {gen.command()[0].upper() for _ in range(50_000)}
    expected = {"GET", "SET", "SETNX", "SETEX", "PSETEX", "GETEX", "GETDEL", "GETSET", "MGET",
                "MSET", "MSETNX", "INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT", "APPEND",
                "STRLEN", "GETRANGE", "SETRANGE", "DEL", "UNLINK", "EXISTS", "TYPE", "KEYS",
                "RENAME", "RENAMENX", "TOUCH", "OBJECT", "EXPIRE", "PEXPIRE", "EXPIREAT",
                "PEXPIREAT", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "PERSIST", "SELECT",
                "DBSIZE", "FLUSHDB", "FLUSHALL", "PING", "ECHO", "CONFIG", "HSET", "HGETALL",
                "HINCRBYFLOAT", "SADD", "SINTERSTORE", "SMOVE", "LPUSH", "LMOVE", "LPOS", "ZADD",
                "ZINCRBY", "ZRANGEBYSCORE", "ZRANGEBYLEX", "ZUNIONSTORE", "ZPOPMAX", "COPY",
                "ZUNION", "ZINTER", "ZDIFF", "ZDIFFSTORE", "ZINTERCARD", "ZRANGESTORE",
                "SETBIT", "GETBIT", "BITCOUNT", "BITPOS", "BITOP", "BITFIELD", "BITFIELD_RO",
                "DUMP", "RESTORE", "MIGRATE",
                "GEOADD", "GEOSEARCH", "GEOSEARCHSTORE", "GEORADIUS", "GEORADIUSBYMEMBER_RO",
                "SORT", "SORT_RO", "LMPOP", "ZMPOP", "LCS", "SUBSTR", "MOVE", "SWAPDB",
                "EVAL", "EVAL_RO", "EVALSHA"}
    assert expected <= names

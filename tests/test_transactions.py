"""Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH — queued replies,
EXECABORT, WATCH invalidation (exactly the writes that Redis counts as
modifications, for every type, plus expiry and flush), the maxmemory checks
of MULTI and EXEC, and optimistic concurrency with many clients."""

import threading

import pytest
import redis

from support import OK, Err, Status

QUEUED = Status("QUEUED")


def test_multi_exec_replies_in_order(c):
    assert c.call("MULTI") == OK
    assert c.call("SET", "k", "1") == QUEUED
    assert c.call("INCR", "k") == QUEUED
    assert c.call("HSET", "h", "f", "v") == QUEUED
    assert c.call("GET", "h") == QUEUED
    assert c.call("EXEC") == [OK, 2, 1, Err(
        "WRONGTYPE Operation against a key holding the wrong kind of value")]
    assert c.call("GET", "k") == b"2"


def test_empty_transaction(c):
    assert c.call("MULTI") == OK
    assert c.call("EXEC") == []


def test_errors_outside_and_nested(c):
    assert c.call("EXEC") == Err("ERR EXEC without MULTI")
    assert c.call("DISCARD") == Err("ERR DISCARD without MULTI")
    assert c.call("MULTI") == OK
    assert c.call("MULTI") == Err("ERR MULTI calls can not be nested")
    assert c.call("WATCH", "k") == Err("ERR WATCH inside MULTI is not allowed")
    assert c.call("SET", "k", "v") == QUEUED
    assert c.call("EXEC") == [OK]


def test_queue_time_error_aborts(c):
    assert c.call("MULTI") == OK
    assert c.call("SET", "k", "v") == QUEUED
    assert c.call("NOSUCH") == Err("ERR unknown command 'NOSUCH', with args beginning with: ")
    assert c.call("GET") == Err("ERR wrong number of arguments for 'get' command")
    assert c.call("EXEC") == Err("EXECABORT Transaction discarded because of previous errors.")
    assert c.call("EXISTS", "k") == 0


def test_discard(c):
    assert c.call("MULTI") == OK
    assert c.call("SET", "k", "v") == QUEUED
    assert c.call("DISCARD") == OK
    assert c.call("EXISTS", "k") == 0
    assert c.call("GET", "k") is None


def test_watch_aborts_on_write_by_other_client(c, connect):
    other = connect()
    c.call("SET", "k", "1")
    assert c.call("WATCH", "k") == OK
    other.call("SET", "k", "2")
    c.call("MULTI")
    c.call("SET", "k", "3")
    assert c.call("EXEC") is None
    assert c.call("GET", "k") == b"2"


def test_watch_on_collections_and_missing_keys(c, connect):
    other = connect()
    assert c.call("WATCH", "h", "s") == OK
    other.call("SADD", "s", "m")
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") is None


def test_watch_untouched_key_executes(c, connect):
    other = connect()
    c.call("WATCH", "k")
    other.call("SET", "unrelated", "1")
    c.call("MULTI")
    c.call("SET", "k", "mine")
    assert c.call("EXEC") == [OK]


def test_unwatch_forgets(c, connect):
    other = connect()
    c.call("WATCH", "k")
    other.call("SET", "k", "x")
    assert c.call("UNWATCH") == OK
    c.call("MULTI")
    c.call("GET", "k")
    assert c.call("EXEC") == [b"x"]


def test_exec_ends_watch(c, connect):
    other = connect()
    c.call("WATCH", "k")
    c.call("MULTI")
    assert c.call("EXEC") == []
    other.call("SET", "k", "x")
    c.call("MULTI")
    c.call("GET", "k")
    assert c.call("EXEC") == [b"x"]


def test_watched_key_expiring_aborts(c):
    c.call("SET", "k", "v", "PX", "50")
    c.call("WATCH", "k")
    c.call("DEBUG", "SLEEP", "0.2")
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") is None


def test_flushall_touches_watched_keys(c, connect):
    other = connect()
    c.call("SET", "k", "v")
    c.call("WATCH", "k")
    other.call("FLUSHALL")
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") is None


def test_resp3_null_on_abort(c, connect):
    other = connect()
    c.call("HELLO", "3")
    c.call("WATCH", "k")
    other.call("SET", "k", "v")
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") is None


def test_select_inside_transaction(c):
    c.call("MULTI")
    c.call("SELECT", "1")
    c.call("SET", "k", "db1")
    assert c.call("EXEC") == [OK, OK]
    assert c.call("GET", "k") == b"db1"
    c.call("SELECT", "0")
    assert c.call("GET", "k") is None


def test_transaction_reaches_every_database_and_counted_key_it_names(c, connect):
    """EXEC locks the shards of its commands' keys only: keys named after a
    SELECT, counted keys (ZUNIONSTORE, SINTERCARD, ZINTERCARD), a COPY into
    another database, watched keys and whole-database commands all run as
    Redis runs them."""
    c.call("ZADD", "z", "1", "a")
    c.call("SADD", "s1", "a", "b")
    c.call("SADD", "s2", "b")
    c.call("SELECT", "3")
    c.call("SET", "watched", "v")
    assert c.call("WATCH", "watched") == OK
    c.call("SELECT", "0")
    connect().call("SET", "unrelated", "v")
    assert c.call("MULTI") == OK
    queued = [
        ("ZUNIONSTORE", "zu", "1", "z"),
        ("SINTERCARD", "2", "s1", "s2"),
        ("ZINTERCARD", "1", "z"),
        ("SELECT", "1"),
        ("SET", "k", "db1"),
        ("COPY", "k", "c", "DB", "2"),
        ("SELECT", "2"),
        ("GET", "c"),
        ("DBSIZE",),
        ("SELECT", "0"),
        ("ZCARD", "zu"),
        ("DBSIZE",),
    ]
    for cmd in queued:
        assert c.call(*cmd) == QUEUED
    assert c.call("EXEC") == [1, 1, 1, OK, OK, 1, OK, b"db1", 1, OK, 1, 5]


def test_optimistic_increments_from_100_clients_are_exact(server, flushed):
    clients, rounds, keys = 100, 20, ["a", "b", "c"]

    def work(n):
        r = server.redis()
        try:
            for i in range(rounds):
                key = keys[(n + i) % len(keys)]
                while True:
                    with r.pipeline() as pipe:
                        try:
                            pipe.watch(key, "total")
                            current = int(pipe.get(key) or 0)
                            total = int(pipe.get("total") or 0)
                            pipe.multi()
                            pipe.set(key, current + 1)
                            pipe.set("total", total + 1)
                            pipe.execute()
                            break
                        except redis.WatchError:
                            continue
        finally:
            r.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = server.redis()
    values = [int(r.get(k)) for k in keys]
    assert sum(values) == clients * rounds
    assert int(r.get("total")) == clients * rounds
    r.close()


def test_transaction_is_atomic_for_other_readers(server, flushed):
    """A reader never sees half of a transaction that moves a unit between keys."""
    r = server.redis()
    r.mset({"x": 100, "y": 0})
    stop = threading.Event()
    bad = []

    def read():
        reader = server.redis()
        while not stop.is_set():
            x, y = reader.mget("x", "y")
            if int(x) + int(y) != 100:
                bad.append((x, y))
        reader.close()

    t = threading.Thread(target=read)
    t.start()
    for _ in range(300):
        with r.pipeline(transaction=True) as pipe:
            pipe.decr("x").incr("y").execute()
        with r.pipeline(transaction=True) as pipe:
            pipe.incr("x").decr("y").execute()
    stop.set()
    t.join()
    r.close()
    assert bad == []


# WATCH k, run `write` from another client, then EXEC: it fails exactly when
# Redis counts the write as a modification of k (signalModifiedKey).
# Each case: (setup, write, whether EXEC fails).
WATCH_CASES = {
    # Strings.
    "SET of an equal value": ([("SET", "k", "v")], [("SET", "k", "v")], True),
    "SET NX on a present key": ([("SET", "k", "v")], [("SET", "k", "x", "NX")], False),
    "SET XX on a missing key": ([], [("SET", "k", "x", "XX")], False),
    "SETNX on a present key": ([("SET", "k", "v")], [("SETNX", "k", "x")], False),
    "SETNX on a missing key": ([], [("SETNX", "k", "x")], True),
    "MSETNX with a present key": ([("SET", "k", "v")], [("MSETNX", "k", "x", "o", "y")], False),
    "MSET": ([], [("MSET", "o", "1", "k", "2")], True),
    "GETSET": ([("SET", "k", "v")], [("GETSET", "k", "v")], True),
    "GETDEL": ([("SET", "k", "v")], [("GETDEL", "k")], True),
    "GETEX without options": ([("SET", "k", "v")], [("GETEX", "k")], False),
    "GETEX PERSIST without a TTL": ([("SET", "k", "v")], [("GETEX", "k", "PERSIST")], False),
    "GETEX PERSIST with a TTL": ([("SET", "k", "v", "EX", "100")], [("GETEX", "k", "PERSIST")], True),
    "GETEX EX": ([("SET", "k", "v")], [("GETEX", "k", "EX", "100")], True),
    "APPEND of an empty string": ([("SET", "k", "v")], [("APPEND", "k", "")], True),
    "APPEND to another type": ([("HSET", "k", "f", "v")], [("APPEND", "k", "x")], False),
    "SETRANGE with an empty string": ([("SET", "k", "v")], [("SETRANGE", "k", "0", "")], False),
    "SETRANGE of an equal byte": ([("SET", "k", "v")], [("SETRANGE", "k", "0", "v")], True),
    "INCRBY 0": ([("SET", "k", "1")], [("INCRBY", "k", "0")], True),
    "INCR of a non-integer": ([("SET", "k", "x")], [("INCR", "k")], False),
    "INCRBYFLOAT 0": ([("SET", "k", "1")], [("INCRBYFLOAT", "k", "0")], True),
    # Keys and TTLs.
    "DEL": ([("SET", "k", "v")], [("DEL", "k")], True),
    "DEL of a missing key": ([], [("DEL", "k")], False),
    "UNLINK": ([("SET", "k", "v")], [("UNLINK", "k")], True),
    "TOUCH": ([("SET", "k", "v")], [("TOUCH", "k")], False),
    "EXPIRE": ([("SET", "k", "v")], [("EXPIRE", "k", "100")], True),
    "EXPIRE in the past": ([("SET", "k", "v")], [("EXPIRE", "k", "-1")], True),
    "EXPIRE NX on a key with a TTL": (
        [("SET", "k", "v", "EX", "100")], [("EXPIRE", "k", "200", "NX")], False),
    "EXPIRE XX on a key without a TTL": ([("SET", "k", "v")], [("EXPIRE", "k", "200", "XX")], False),
    "EXPIRE GT to a nearer deadline": (
        [("SET", "k", "v", "EX", "100")], [("EXPIRE", "k", "50", "GT")], False),
    "PERSIST without a TTL": ([("SET", "k", "v")], [("PERSIST", "k")], False),
    "PERSIST with a TTL": ([("SET", "k", "v", "EX", "100")], [("PERSIST", "k")], True),
    "RENAME onto itself": ([("SET", "k", "v")], [("RENAME", "k", "k")], False),
    "RENAME away": ([("SET", "k", "v")], [("RENAME", "k", "o")], True),
    "RENAME onto": ([("SET", "o", "v")], [("RENAME", "o", "k")], True),
    "RENAMENX onto a present key": ([("SET", "k", "v"), ("SET", "o", "v")], [("RENAMENX", "o", "k")], False),
    "COPY onto a present key": ([("SET", "k", "v"), ("SET", "o", "v")], [("COPY", "o", "k")], False),
    "COPY REPLACE": ([("SET", "k", "v"), ("SET", "o", "v")], [("COPY", "o", "k", "REPLACE")], True),
    "COPY onto a missing key": ([("SET", "o", "v")], [("COPY", "o", "k")], True),
    "FLUSHALL with the key present": ([("SET", "k", "v")], [("FLUSHALL",)], True),
    "FLUSHALL with the key missing": ([("SET", "o", "v")], [("FLUSHALL",)], False),
    "FLUSHDB of another database": ([("SET", "k", "v")], [("SELECT", "1"), ("FLUSHDB",)], False),
    # Hashes.
    "HSET of an equal value": ([("HSET", "k", "f", "v")], [("HSET", "k", "f", "v")], True),
    "HSETNX of a present field": ([("HSET", "k", "f", "v")], [("HSETNX", "k", "f", "x")], False),
    "HSETNX of a new field": ([("HSET", "k", "f", "v")], [("HSETNX", "k", "g", "x")], True),
    "HDEL of an absent field": ([("HSET", "k", "f", "v")], [("HDEL", "k", "g")], False),
    "HDEL of the last field": ([("HSET", "k", "f", "v")], [("HDEL", "k", "f", "g")], True),
    "HINCRBY 0": ([("HSET", "k", "f", "1")], [("HINCRBY", "k", "f", "0")], True),
    "HINCRBY of a non-integer": ([("HSET", "k", "f", "x")], [("HINCRBY", "k", "f", "1")], False),
    # Sets.
    "SADD of a present member": ([("SADD", "k", "a")], [("SADD", "k", "a")], False),
    "SADD of a new member": ([("SADD", "k", "a")], [("SADD", "k", "a", "b")], True),
    "SREM of an absent member": ([("SADD", "k", "a")], [("SREM", "k", "b")], False),
    "SREM": ([("SADD", "k", "a", "b")], [("SREM", "k", "b")], True),
    "SMOVE of an absent member": ([("SADD", "k", "a")], [("SMOVE", "k", "o", "b")], False),
    "SMOVE into a set holding the member": (
        [("SADD", "k", "a"), ("SADD", "o", "a")], [("SMOVE", "o", "k", "a")], False),
    "SMOVE into the set": ([("SADD", "k", "a"), ("SADD", "o", "b")], [("SMOVE", "o", "k", "b")], True),
    "SPOP 0": ([("SADD", "k", "a")], [("SPOP", "k", "0")], False),
    "SPOP": ([("SADD", "k", "a", "b")], [("SPOP", "k")], True),
    "SINTERSTORE of nothing onto a missing key": ([], [("SINTERSTORE", "k", "o")], False),
    "SINTERSTORE of nothing onto the key": ([("SADD", "k", "a")], [("SINTERSTORE", "k", "o")], True),
    "SUNIONSTORE": ([("SADD", "o", "a")], [("SUNIONSTORE", "k", "o")], True),
    # Lists.
    "LREM of an absent element": ([("RPUSH", "k", "a")], [("LREM", "k", "0", "b")], False),
    "LREM": ([("RPUSH", "k", "a", "b")], [("LREM", "k", "0", "b")], True),
    "LTRIM keeping every element": ([("RPUSH", "k", "a")], [("LTRIM", "k", "0", "-1")], True),
    "LINSERT without the pivot": ([("RPUSH", "k", "a")], [("LINSERT", "k", "BEFORE", "x", "y")], False),
    "LINSERT": ([("RPUSH", "k", "a")], [("LINSERT", "k", "BEFORE", "a", "y")], True),
    "LSET of an equal value": ([("RPUSH", "k", "a")], [("LSET", "k", "0", "a")], True),
    "LSET out of range": ([("RPUSH", "k", "a")], [("LSET", "k", "5", "a")], False),
    "LPOP 0": ([("RPUSH", "k", "a")], [("LPOP", "k", "0")], False),
    "RPOP": ([("RPUSH", "k", "a", "b")], [("RPOP", "k")], True),
    "LPUSHX on a missing key": ([], [("LPUSHX", "k", "a")], False),
    "RPUSH": ([("RPUSH", "k", "a")], [("RPUSH", "k", "a")], True),
    "LMOVE rotating the list": ([("RPUSH", "k", "a")], [("LMOVE", "k", "k", "LEFT", "RIGHT")], True),
    "RPOPLPUSH from a missing key": ([], [("RPOPLPUSH", "o", "k")], False),
    # Sorted sets.
    "ZADD of an equal score": ([("ZADD", "k", "1", "a")], [("ZADD", "k", "1", "a")], False),
    "ZADD of a new score": ([("ZADD", "k", "1", "a")], [("ZADD", "k", "2", "a")], True),
    "ZADD NX of a present member": ([("ZADD", "k", "1", "a")], [("ZADD", "k", "NX", "2", "a")], False),
    "ZADD XX of a new member": ([("ZADD", "k", "1", "a")], [("ZADD", "k", "XX", "2", "b")], False),
    "ZADD GT of a lower score": ([("ZADD", "k", "1", "a")], [("ZADD", "k", "GT", "0", "a")], False),
    "ZADD XX on a missing key": ([], [("ZADD", "k", "XX", "1", "a")], False),
    "ZINCRBY 0": ([("ZADD", "k", "1", "a")], [("ZINCRBY", "k", "0", "a")], False),
    "ZINCRBY": ([("ZADD", "k", "1", "a")], [("ZINCRBY", "k", "1", "a")], True),
    "ZREM of an absent member": ([("ZADD", "k", "1", "a")], [("ZREM", "k", "b")], False),
    "ZREM": ([("ZADD", "k", "1", "a", "2", "b")], [("ZREM", "k", "b")], True),
    "ZREMRANGEBYSCORE of nothing": ([("ZADD", "k", "1", "a")], [("ZREMRANGEBYSCORE", "k", "5", "6")], False),
    "ZREMRANGEBYRANK": ([("ZADD", "k", "1", "a", "2", "b")], [("ZREMRANGEBYRANK", "k", "0", "0")], True),
    "ZPOPMIN 0": ([("ZADD", "k", "1", "a")], [("ZPOPMIN", "k", "0")], False),
    "ZPOPMAX": ([("ZADD", "k", "1", "a", "2", "b")], [("ZPOPMAX", "k")], True),
    "ZUNIONSTORE of nothing onto a missing key": ([], [("ZUNIONSTORE", "k", "1", "o")], False),
    "ZUNIONSTORE": ([("ZADD", "o", "1", "a")], [("ZUNIONSTORE", "k", "1", "o")], True),
    "ZDIFFSTORE of nothing onto the key": (
        [("ZADD", "k", "1", "a")], [("ZDIFFSTORE", "k", "1", "o")], True),
    "ZRANGESTORE of nothing onto a missing key": ([], [("ZRANGESTORE", "k", "o", "0", "-1")], False),
    "ZRANGESTORE": ([("ZADD", "o", "1", "a")], [("ZRANGESTORE", "k", "o", "0", "-1")], True),
}


@pytest.mark.parametrize("setup, write, fails", WATCH_CASES.values(), ids=WATCH_CASES.keys())
def test_watch_fails_exactly_on_modification(c, connect, setup, write, fails):
    other = connect()
    for cmd in setup:
        c.call(*cmd)
    assert c.call("WATCH", "k") == OK
    for cmd in write:
        other.call(*cmd)
    assert c.call("MULTI") == OK
    assert c.call("PING") == QUEUED
    assert (c.call("EXEC") is None) == fails


def test_key_expired_when_watched_fails_only_if_written_after(c, connect):
    """A key already expired when watched counts as missing: its deletion is
    no change, a new value is."""
    other = connect()
    c.call("SET", "k", "v", "PX", "10")
    c.call("DEBUG", "SLEEP", "0.05")
    c.call("WATCH", "k")
    assert other.call("GET", "k") is None
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") == [Status("PONG")]
    c.call("SET", "k", "v", "PX", "10")
    c.call("DEBUG", "SLEEP", "0.05")
    c.call("WATCH", "k")
    other.call("SET", "k", "new")
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") is None


OOM = "OOM command not allowed when used memory > 'maxmemory'."


@pytest.fixture
def memory_limit(c, connect, restore_config):
    """Call with True to put the server over maxmemory (noeviction), False to lift the limit."""
    restore_config("maxmemory", "maxmemory-policy")
    admin = connect()
    assert admin.call("CONFIG", "SET", "maxmemory-policy", "noeviction") == OK
    c.call("SET", "filler", "x" * 100)

    def over(exceeded):
        assert admin.call("CONFIG", "SET", "maxmemory", "1" if exceeded else "0") == OK

    return over


def test_every_command_inside_multi_is_refused_over_maxmemory(c, memory_limit):
    memory_limit(True)
    assert c.call("MULTI") == OK
    assert c.call("SET", "k", "v") == Err(OOM)
    assert c.call("GET", "k") == Err(OOM)
    assert c.call("PING") == Err(OOM)
    assert c.call("WATCH", "k") == Err(OOM)
    assert c.call("EXEC") == Err("EXECABORT Transaction discarded because of previous errors.")


def test_exec_refused_over_maxmemory_when_queue_may_grow_memory(c, connect, memory_limit):
    other = connect()
    assert c.call("WATCH", "k") == OK
    assert c.call("MULTI") == OK
    assert c.call("SET", "k", "v") == QUEUED
    assert c.call("GET", "filler") == QUEUED
    memory_limit(True)
    assert c.call("EXEC") == Err(f"EXECABORT Transaction discarded because of: {OOM}")
    assert c.call("EXEC") == Err("ERR EXEC without MULTI")
    memory_limit(False)
    assert c.call("GET", "k") is None
    other.call("SET", "k", "x")
    assert c.call("MULTI") == OK
    assert c.call("EXEC") == [], "the refused EXEC ended the watch"


def test_exec_without_memory_growing_commands_runs_over_maxmemory(c, memory_limit):
    assert c.call("MULTI") == OK
    assert c.call("GET", "k") == QUEUED
    assert c.call("DEL", "filler") == QUEUED
    memory_limit(True)
    assert c.call("EXEC") == [None, 1]


def test_discard_runs_over_maxmemory(c, memory_limit):
    assert c.call("MULTI") == OK
    assert c.call("SET", "k", "v") == QUEUED
    memory_limit(True)
    assert c.call("DISCARD") == OK
    memory_limit(False)
    assert c.call("EXISTS", "k") == 0


@pytest.mark.parametrize("where,fails", [
    ("watched db", True), ("other db", True), ("neither", False)])
def test_swapdb_touches_watched_keys_in_both_databases(c, connect, where, fails):
    if where == "watched db":
        c.call("SET", "k", "v")
    elif where == "other db":
        c.call("SELECT", "1")
        c.call("SET", "k", "v")
        c.call("SELECT", "0")
    c.call("WATCH", "k")
    other = connect()
    assert other.call("SWAPDB", "0", "1") == OK
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") == (None if fails else [Status("PONG")])


def test_move_touches_the_watched_key_in_both_databases(c, connect):
    c.call("SET", "k", "v")
    c.call("SELECT", "1")
    c.call("WATCH", "k")
    c.call("SELECT", "0")
    other = connect()
    assert other.call("MOVE", "k", "1") == 1
    c.call("MULTI")
    c.call("PING")
    assert c.call("EXEC") is None


def test_move_and_swapdb_inside_a_transaction(c):
    c.call("SET", "k", "v")
    c.call("MULTI")
    c.call("MOVE", "k", "2")
    c.call("SWAPDB", "0", "2")
    c.call("GET", "k")
    assert c.call("EXEC") == [1, OK, b"v"]

"""Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH — queued replies,
EXECABORT, WATCH invalidation (writes, expiry, flush), and optimistic
concurrency with many clients."""

import threading

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

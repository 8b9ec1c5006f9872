"""Replication, the primary's side beyond what test_replication.py's `kinds` tests cover: the
server under test is the primary of a keel or of a real redis-server 7.0 replica. Run with
--server=redis, the same tests check redis-server as the primary, where the expectations come
from.

A replica too far behind for its output limit is dropped and resyncs in full; keys the primary
expires or evicts are deleted on the replica; writes whose effect their arguments do not fix
(random pops, floats, scripts, generated IDs, pops served to blocked clients) replicate their
effect; WAIT and min-replicas-to-write count the replica.
"""

import os
import signal
import time

import pytest

from support import OK, Err, info, wait_for
from test_persistence import fill_bulk, launch  # noqa: F401 (fixture)
from test_replication import assert_same_data, replication, sync_stats, synced_pair, wait_in_sync


@pytest.fixture(params=["keel", "redis"])
def pair(request, launch, tmp_path, server_kind):
    """The server under test as a primary, with a replica of each kind, in sync."""
    return synced_pair(launch, tmp_path, kinds=(server_kind, request.param))


def test_a_replica_too_far_behind_is_dropped_and_resyncs(pair):
    """A stopped replica falls behind by more than `client-output-buffer-limit replica` (1 MB
    here): the primary drops it rather than holding more (its backlog memory stays within the
    limit), and once it runs again it resyncs in full."""
    primary, replica = pair
    with primary.conn() as p:
        assert p.call("CONFIG", "SET", "repl-backlog-size", "16384") == OK
        assert p.call("CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 0 0") == OK
    full = sync_stats(primary)[0]
    os.kill(replica.proc.pid, signal.SIGSTOP)
    try:
        with primary.conn() as p:
            for round_ in range(40):
                p.pipeline([("SET", f"big:{round_}:{i}", "y" * 10_000) for i in range(20)])
            wait_for(lambda: replication(p)["connected_slaves"] == "0", 15, "the replica dropped")
            memory = info(p, "memory")
            if "mem_replication_backlog" in memory:
                assert int(memory["mem_replication_backlog"]) <= (1 << 20) + 16384
    finally:
        os.kill(replica.proc.pid, signal.SIGCONT)
    wait_in_sync(primary, replica)
    assert sync_stats(primary)[0] == full + 1
    assert_same_data(primary, replica)


def test_expired_and_evicted_keys_are_deleted_on_the_replica(pair):
    """A replica never expires nor evicts by itself: the primary's DEL for each key that
    expires there (read, written over, moved over or found by active expiry) and each key it
    evicts is what removes it from the replica, which then holds exactly the primary's keys; the
    DEL of a key a write replaces comes before that write."""
    primary, replica = pair
    with primary.conn() as p:
        assert p.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random") == OK
        p.pipeline([("SET", f"short:{i}", i, "PX", 100) for i in range(300)])
        assert p.call("SET", "rewritten", "old", "PX", 50) == OK
        assert p.pipeline([("SET", "moved", "v"), ("SELECT", 1), ("SET", "moved", "old", "PX", 50),
                           ("SELECT", 0)]) == [OK] * 4
    wait_in_sync(primary, replica)
    time.sleep(0.3)
    with primary.conn() as p:
        assert p.call("GET", "short:1") is None
        assert p.call("SET", "rewritten", "new") == OK
        assert p.call("MOVE", "moved", 1) == 1  # over db 1's expired one
    with replica.conn() as r:
        wait_for(lambda: r.call("DBSIZE") <= key_count_of(primary), 10, "the DELs to arrive")
    wait_in_sync(primary, replica)
    with replica.conn() as r, primary.conn() as p:
        assert r.call("DBSIZE") == p.call("DBSIZE")
        assert r.call("GET", "rewritten") == b"new"
        assert r.pipeline([("SELECT", 1), ("GET", "moved"), ("SELECT", 0)]) == [OK, b"v", OK]
        used = int(info(p, "memory")["used_memory"])
        assert p.call("CONFIG", "SET", "maxmemory", str(used + (4 << 20))) == OK
        p.pipeline([("SET", f"fill:{i}", "z" * 2000) for i in range(6000)])
        assert int(info(p, "stats")["evicted_keys"]) > 0
        assert p.call("CONFIG", "SET", "maxmemory", "0") == OK  # no eviction while comparing
    wait_in_sync(primary, replica)
    assert_same_data(primary, replica)


def key_count_of(srv) -> int:
    with srv.conn() as c:
        return c.call("DBSIZE")


def test_random_float_and_blocking_writes_replicate_their_effect(pair):
    """Writes whose effect their arguments do not fix reach the replica as that effect: SPOP's
    members, INCRBYFLOAT's and HINCRBYFLOAT's results, a script's writes, XADD's generated ID,
    and pops served to clients that were blocked (BLPOP, BLMOVE, BZPOPMIN, BLMPOP)."""
    primary, replica = pair
    blocked = [("BLPOP", "bl:a", "bl:b", 0), ("BLMOVE", "bl:src", "bl:dst", "LEFT", "RIGHT", 0),
               ("BZPOPMIN", "bz", 0), ("BLMPOP", 0, 1, "bl:m", "RIGHT", "COUNT", 2)]
    waiters = [primary.conn(timeout=30) for _ in blocked]
    for conn, command in zip(waiters, blocked):
        conn.send(*command)
    with primary.conn() as p:
        wait_for(lambda: int(info(p, "clients")["blocked_clients"]) == len(blocked), 10,
                 "the clients to block")
        p.pipeline([("SADD", "s:rand", *range(50)), ("SPOP", "s:rand"), ("SPOP", "s:rand", 5),
                    ("INCRBYFLOAT", "f", "0.1"), ("INCRBYFLOAT", "f", "1e-3"),
                    ("HINCRBYFLOAT", "hf", "x", "2.5e-1"), ("XADD", "st", "*", "k", "v"),
                    ("EVAL", "return redis.call('SPOP', KEYS[1])", 1, "s:rand"),
                    ("RPUSH", "bl:b", "one", "two"), ("RPUSH", "bl:src", "moved"),
                    ("ZADD", "bz", 1, "low", 2, "high"), ("RPUSH", "bl:m", "a", "b", "c")])
    replies = [conn.read() for conn in waiters]
    for conn in waiters:
        conn.close()
    assert replies[0] == [b"bl:b", b"one"] and replies[1] == b"moved", replies
    wait_in_sync(primary, replica)
    assert_same_data(primary, replica)


def test_wait_and_min_replicas_to_write(pair):
    """WAIT returns once the replica acknowledged the writes (1), or at its timeout with the
    count reached (asking for 2); min-replicas-to-write 2 refuses writes with NOREPLICAS, 1
    takes them, and INFO shows min_slaves_good_slaves."""
    primary, replica = pair
    with primary.conn() as p:
        assert p.call("SET", "acked", "1") == OK
        assert p.call("WAIT", 1, 0) == 1
        started = time.monotonic()
        assert p.call("WAIT", 2, 300) == 1
        assert time.monotonic() - started >= 0.25
        assert p.call("CONFIG", "SET", "min-replicas-to-write", "2") == OK
        assert p.call("SET", "refused", "1") == Err("NOREPLICAS Not enough good replicas to write.")
        assert replication(p)["min_slaves_good_slaves"] == "1"
        assert p.call("CONFIG", "SET", "min-replicas-to-write", "1") == OK
        assert p.call("SET", "taken", "1") == OK
        assert p.call("GET", "refused") is None
    with replica.conn() as r:
        assert r.call("WAIT", 0, 0) == Err(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis "
            "4.0 if a replica is configured to be writable (which is not the default) writes to "
            "replicas are just local and are not propagated.")


def test_refused_and_idle_writes_are_not_replicated(pair):
    """A write refused at maxmemory (noeviction), one that fails (WRONGTYPE) and one that changes
    nothing (SET NX of a present key, SADD of a present member) reach no replica: a replica
    ignores maxmemory, so a refused write sent on would part the two keyspaces."""
    primary, replica = pair
    with primary.conn() as p:
        assert p.call("CONFIG", "SET", "repl-ping-replica-period", "3600") == OK  # offsets still
        offset = int(replication(p)["master_repl_offset"])
        assert p.call("SET", "present", "v") == OK
        assert p.call("SADD", "members", "m") == 1
        after_writes = int(replication(p)["master_repl_offset"])
        assert after_writes > offset
        assert p.call("SET", "present", "other", "NX") is None
        assert p.call("SADD", "members", "m") == 0
        assert p.call("LPUSH", "present", "x") == Err(
            "WRONGTYPE Operation against a key holding the wrong kind of value")
        assert int(replication(p)["master_repl_offset"]) == after_writes
        assert p.call("CONFIG", "SET", "maxmemory-policy", "noeviction") == OK
        assert p.call("CONFIG", "SET", "maxmemory", "1") == OK
        assert p.call("SET", "refused", "x" * 1000) == Err(
            "OOM command not allowed when used memory > 'maxmemory'.")
        assert p.call("CONFIG", "SET", "maxmemory", "0") == OK
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        assert r.call("EXISTS", "refused") == 0
        assert r.call("GET", "present") == b"v"
    assert_same_data(primary, replica)


def read_line(conn) -> bytes:
    line = b""
    while not line.endswith(b"\r\n"):
        line += conn.read_exact_bytes(1)
    return line


def test_bad_replicas_get_errors_and_the_primary_keeps_serving(pair):
    """A PSYNC with an offset that is not a number gets Redis's error; a replica that leaves in
    the middle of its snapshot, and one that sends garbage once it follows the stream, lose
    their connection and nothing else: the primary keeps serving and its good replica keeps
    following."""
    primary, replica = pair
    with primary.conn() as c:
        assert c.call("PSYNC", "?", "abc") == Err("ERR value is not an integer or out of range")
    fill_bulk(primary.port, 20_000)
    with primary.conn() as c:
        assert c.call("REPLCONF", "listening-port", "1") == OK
        c.send("PSYNC", "?", "-1")
        assert read_line(c).startswith(b"+FULLRESYNC ")
        while not read_line(c).startswith(b"$"):  # (newlines keep the link alive meanwhile)
            pass
        c.read_exact_bytes(1000)
    with primary.conn() as c:
        assert c.call("REPLCONF", "listening-port", "2") == OK
        c.send("PSYNC", "?", "-1")
        assert read_line(c).startswith(b"+FULLRESYNC ")
        while not (size := read_line(c)).startswith(b"$"):
            pass
        c.read_exact_bytes(int(size[1:]))
        c.send_raw(b"*1\r\n$abc\r\n")
        assert c.is_closed()
    with primary.conn() as p:
        wait_for(lambda: replication(p)["connected_slaves"] == "1", 10, "the bad replicas to go")
        assert p.call("SET", "after-bad-replicas", "1") == OK
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        assert r.call("GET", "after-bad-replicas") == b"1"


LIBRARY = """#!lua name=replicated
redis.register_function{function_name='twice', callback=function(keys)
  return 2 * tonumber(redis.call('GET', keys[1]))
end, flags={'no-writes'}}"""


def test_publish_and_function_changes_reach_the_replica(pair):
    """Writes outside the keyspace are sent on as Redis sends them: a PUBLISH on the primary
    reaches a subscriber of the replica, and FUNCTION LOAD makes FCALL_RO work there; FUNCTION
    DELETE takes it away again."""
    primary, replica = pair
    with replica.conn() as subscriber, primary.conn() as p:
        assert subscriber.call("SUBSCRIBE", "news") == [b"subscribe", b"news", 1]
        assert p.call("PUBLISH", "news", "hello") == 0
        assert subscriber.read() == [b"message", b"news", b"hello"]
        assert p.call("FUNCTION", "LOAD", LIBRARY) == b"replicated"
        assert p.call("SET", "n", "21") == OK
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        assert r.call("FCALL_RO", "twice", 1, "n") == 42
    with primary.conn() as p:
        assert p.call("FUNCTION", "DELETE", "replicated") == OK
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        assert b"replicated" not in [library[1] for library in r.call("FUNCTION", "LIST")]

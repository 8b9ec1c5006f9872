"""Replication, the replica's side: the server under test follows a real redis-server 7.0
primary (REPLICAOF, SLAVEOF, the `replicaof` directive, `masterauth`/`masteruser`). It goes
through the handshake, loads a full resync from a diskless (`$EOF:`) or a sized payload, applies
the command stream, continues with a partial resync after the link drops, and meanwhile serves
reads, refuses clients' writes (READONLY) and never expires keys itself. A fake primary (a
socket server here) sends what a broken or hostile one would; the replica must log it, keep
serving and try again.

The primary is redis-server (`repl-diskless-sync-delay 0`, so it starts at once) and the
replica the server under test, except in the tests taking `kinds`, which also run the server
under test as the primary of a keel and of a redis-server replica (test_replication_primary.py
has the rest of the primary's side). "In sync" means the replica's link is up and its offset
(INFO replication `slave_repl_offset`) is the primary's `master_repl_offset`; then the whole
keyspaces are compared with test_persistence's `keyspace_snapshot`.
"""

import re
import socket
import threading
import time

import pytest

from support import (OK, PONG, Err, RespConn, ServerProcess, Status, encode_command, free_port, info,
                     wait_for)
from test_persistence import (assert_same_keyspace, fill_bulk, fill_every_type, key_count,
                              keyspace_snapshot, launch, pipe, shutdown)  # noqa: F401 (fixture)

READONLY = Err("READONLY You can't write against a read only replica.")
ALREADY = Status("OK Already connected to specified master")
SYNC_TIMEOUT = 40.0


# ---- a primary and its replica ---------------------------------------------------------------


@pytest.fixture(params=["redis-to-tested", "tested-to-keel", "tested-to-redis"])
def kinds(request, server_kind):
    """(primary kind, replica kind): the server under test as the replica of a redis-server, or
    as the primary of a keel or of a redis-server."""
    return {"redis-to-tested": ("redis", server_kind), "tested-to-keel": (server_kind, "keel"),
            "tested-to-redis": (server_kind, "redis")}[request.param]


def start_primary(launch, tmp_path, diskless="yes", config=None, kind="redis"):
    """A primary (redis-server unless `kind` says) with its own folder; `diskless` is
    `repl-diskless-sync`."""
    folder = tmp_path / "primary"
    folder.mkdir(exist_ok=True)
    return launch(folder, kind=kind, config={"repl-diskless-sync": diskless,
                                             "repl-diskless-sync-delay": "0", **(config or {})})


def start_replica(launch, tmp_path, config=None, kind=None):
    """The server under test (or one of `kind`) with its own folder (not yet a replica unless
    `config` says so)."""
    folder = tmp_path / "replica"
    folder.mkdir(exist_ok=True)
    return launch(folder, kind=kind, config=config)


def connect(srv, auth=None):
    """A connection, authenticated with `auth` (a password, or a tuple of AUTH's arguments)."""
    conn = srv.conn(timeout=60)
    if auth is not None:
        assert conn.call("AUTH", *((auth,) if isinstance(auth, str) else auth)) == OK
    return conn


def replication(conn) -> dict:
    return info(conn, "replication")


def follow(replica, primary):
    with replica.conn() as c:
        assert c.call("REPLICAOF", "127.0.0.1", primary.port) == OK


def wait_in_sync(primary, replica, auth=None, timeout=SYNC_TIMEOUT, stall=5.0) -> int:
    """Waits until the replica's link is up and it has applied all the primary has sent;
    returns that offset. Fails early when the replica's offset, behind, stops moving for
    `stall` seconds."""
    deadline = time.monotonic() + timeout
    last, moved = None, time.monotonic()
    with connect(primary, auth) as p, replica.conn() as r:
        while True:
            want = int(replication(p)["master_repl_offset"])
            fields = replication(r)
            got = int(fields.get("slave_repl_offset", -1))
            if fields.get("master_link_status") == "up" and got == want:
                return want
            now = time.monotonic()
            if got != last:
                last, moved = got, now
            if now > deadline or now - moved > stall:
                raise AssertionError(
                    f"replica not in sync: its offset {got}, the primary's {want}\n"
                    f"replica: {fields}\nprimary: {replication(p)}\n"
                    f"replica log:\n{replica.output()[-3000:]}")
            time.sleep(0.02)


def expiry_times(conn, snapshot) -> dict:
    """Every key's absolute expiry (PEXPIRETIME), per db, for the keys of `snapshot`."""
    times = {}
    for db, keys in snapshot["dbs"].items():
        assert conn.call("SELECT", db) == OK
        names = sorted(keys)
        replies = []
        for i in range(0, len(names), 2000):
            replies += conn.pipeline([("PEXPIRETIME", k) for k in names[i:i + 2000]])
        times[db] = dict(zip(names, replies))
    assert conn.call("SELECT", 0) == OK
    return times


def assert_same_data(primary, replica, auth=None):
    """The whole keyspaces are equal; expiry times exactly so (PEXPIRETIME: the snapshots' own
    expiry, from PTTL, drifts with how long reading 100k keys takes on a busy machine)."""
    with connect(primary, auth) as p, replica.conn() as r:
        expected = keyspace_snapshot(p)
        actual = keyspace_snapshot(r)
        assert_same_keyspace(expected, actual, ttl_slack_ms=60_000)
        want, got = expiry_times(p, expected), expiry_times(r, expected)
        for db in want:
            differ = [(k, want[db][k], got[db][k]) for k in want[db] if want[db][k] != got[db][k]]
            assert not differ, f"db {db}: {len(differ)} expiry times differ, e.g. {differ[:5]}"
    return expected


def sync_stats(primary, auth=None) -> tuple:
    with connect(primary, auth) as p:
        stats = info(p, "stats")
    return int(stats["sync_full"]), int(stats["sync_partial_ok"]), int(stats["sync_partial_err"])


def fill_collections(port, count=2000):
    """`count` small keys of each collection type, every fifth with a TTL an hour away."""
    commands = []
    for i in range(count):
        commands += [("HSET", f"ch:{i}", "a", i, "b", f"v{i}"), ("RPUSH", f"cl:{i}", i, "x", "y"),
                     ("SADD", f"cs:{i}", i, "m"), ("ZADD", f"cz:{i}", i, "m", -i, "n")]
        if i % 5 == 0:
            commands += [("PEXPIRE", f"{t}:{i}", 3_600_000 + i) for t in ("ch", "cl", "cs", "cz")]
    pipe(port, commands)


def synced_pair(launch, tmp_path, diskless="yes", bulk=0, kinds=("redis", None)):
    """A filled primary and its replica, in sync: a redis-server and the server under test
    unless `kinds` (primary kind, replica kind) says."""
    primary = start_primary(launch, tmp_path, diskless, kind=kinds[0])
    with primary.conn() as c:
        fill_every_type(c)
    if bulk:
        fill_bulk(primary.port, bulk)
    replica = start_replica(launch, tmp_path, kind=kinds[1])
    follow(replica, primary)
    wait_in_sync(primary, replica)
    return primary, replica


class WriteLoad(threading.Thread):
    """Writes to the primary in pipelined rounds until stopped: strings, counters, TTLs, hashes,
    lists, deletions, rewrites of the bulk keys, a transaction, a script and a second db."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.rounds = 0
        self.error = None
        self._stop_event = threading.Event()

    @staticmethod
    def batch(i):
        n = i % 1000
        return [
            ("SET", f"load:s:{n}", f"v{i}"), ("INCR", "load:counter"),
            ("EXPIRE", f"load:s:{n}", 1000 + n), ("HSET", "load:h", f"f{n}", i),
            ("LPUSH", "load:l", i), ("LTRIM", "load:l", 0, 499),
            ("DEL", f"load:s:{(n + 500) % 1000}"),
            ("SET", f"bulk:{(i * 7919) % 100_000}", f"new-{i}"),
            ("ZADD", "load:z", i, f"m{n}"), ("SADD", "load:set", n, n + 1), ("SPOP", "load:set"),
            ("MULTI",), ("INCR", "load:tx"), ("SET", f"load:tx:{n}", i),
            ("HINCRBY", "h:small", "n", 1), ("EXEC",),
            ("EVAL", "redis.call('INCR', KEYS[1]) return redis.call('SET', KEYS[2], ARGV[1])", 2,
             "load:eval", f"load:eval:{n % 10}", i),
            ("SELECT", 1), ("INCRBY", "load:db1", 3), ("SELECT", 0),
        ]

    def run(self):
        try:
            with RespConn(self.port, timeout=60) as c:
                while not self._stop_event.is_set():
                    for _ in range(10):
                        replies = c.pipeline(self.batch(self.rounds))
                        errors = [r for r in replies if isinstance(r, Err)]
                        assert not errors, errors
                        self.rounds += 1
        except Exception as e:  # reported by finish()
            self.error = e

    def finish(self):
        self._stop_event.set()
        self.join(timeout=60)
        assert not self.is_alive(), "the write load did not stop"
        if self.error is not None:
            raise self.error


# ---- arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ("REPLICAOF", "127.0.0.1", "abc"), ("REPLICAOF", "127.0.0.1", "70000"),
    ("REPLICAOF", "127.0.0.1", "-1"), ("SLAVEOF", "127.0.0.1", "1.5"), ("REPLICAOF", "no", "two"),
])
def test_replicaof_refuses_a_bad_port(c, args):
    assert c.call(*args) == Err("ERR Invalid master port")
    assert c.call("ROLE")[0] == b"master"


def test_replication_commands_arity_and_role_of_a_primary(c):
    assert c.call("REPLICAOF", "127.0.0.1") == Err(
        "ERR wrong number of arguments for 'replicaof' command")
    assert c.call("SLAVEOF", "a", "b", "c") == Err(
        "ERR wrong number of arguments for 'slaveof' command")
    assert c.call("ROLE", "x") == Err("ERR wrong number of arguments for 'role' command")
    assert c.call("REPLICAOF", "NO", "ONE") == OK
    role = c.call("ROLE")
    assert role[0] == b"master" and isinstance(role[1], int) and role[2] == [], role
    fields = replication(c)
    assert (fields["role"], fields["connected_slaves"]) == ("master", "0")
    assert re.fullmatch(r"[0-9a-f]{40}", fields["master_replid"]), fields


# ---- full synchronisation ---------------------------------------------------------------------


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_full_sync_under_a_write_load(launch, tmp_path, diskless, kinds):
    """Heavy: every type plus 100k string keys and 8k small collections sync to the replica
    while a thread writes to the primary all along (transactions, scripts, SPOP, TTLs, db 1;
    diskless: the `$EOF:` payload; else one with its length); once the replica's offset is the
    primary's, the keyspaces and absolute expiry times are equal, the replica's own data
    before the sync is gone, and the primary shows it (INFO, ROLE, CLIENT LIST flag S)."""
    primary = start_primary(launch, tmp_path, diskless, kind=kinds[0])
    with primary.conn() as c:
        fill_every_type(c)
    fill_bulk(primary.port)
    fill_collections(primary.port)
    replica = start_replica(launch, tmp_path, kind=kinds[1])
    with replica.conn() as c:
        assert c.call("SET", "replica-only", "dropped by the sync") == OK
    load = WriteLoad(primary.port)
    load.start()
    try:
        wait_for(lambda: load.rounds > 20, 30, "the write load to start")
        rounds_at_replicaof = load.rounds
        follow(replica, primary)
        with replica.conn() as r:
            wait_for(lambda: replication(r).get("master_link_status") == "up", SYNC_TIMEOUT,
                     "the link to come up")
        rounds_at_link_up = load.rounds
        wait_for(lambda: load.rounds > rounds_at_link_up + 50, 30, "writes after the sync")
    finally:
        load.finish()
    assert rounds_at_link_up > rounds_at_replicaof, "no write happened during the sync"
    offset = wait_in_sync(primary, replica)
    expected = assert_same_data(primary, replica)
    assert key_count(expected) > 108_000
    with primary.conn() as p:  # the replica's acknowledgements (every second) reach it
        def acknowledged():
            fields = replication(p)
            return f",offset={fields['master_repl_offset']}," in fields["slave0"]
        wait_for(acknowledged, 10, "the replica to acknowledge the offset")
    with primary.conn() as p:
        fields = replication(p)
        assert fields["connected_slaves"] == "1" and fields["repl_backlog_active"] == "1"
        assert fields["slave0"].startswith(f"ip=127.0.0.1,port={replica.port},state=online,")
        replid = fields["master_replid"]
        assert sync_stats(primary)[0] == 1
        role = p.call("ROLE")
        assert role[0] == b"master" and role[1] >= offset, role
        assert role[2][0][:2] == [b"127.0.0.1", str(replica.port).encode()], role
        listing = p.call("CLIENT", "LIST", "TYPE", "replica").decode().splitlines()
        assert len(listing) == 1 and " flags=S " in listing[0], listing
    with replica.conn() as r:
        # (the offsets grow by the primary's PING every 10 seconds: read together)
        def role_and_offset():
            role, fields = r.call("ROLE"), replication(r)
            return (role, fields) if role[4] == int(fields["slave_repl_offset"]) else None
        role, fields = wait_for(role_and_offset, 10, "ROLE and INFO to agree")
        assert role[:4] == [b"slave", b"127.0.0.1", primary.port, b"connected"], role
        assert role[4] >= offset
        assert fields["role"] == "slave"
        assert fields["master_host"] == "127.0.0.1"
        assert fields["master_port"] == str(primary.port)
        assert fields["master_sync_in_progress"] == "0"
        assert fields["master_repl_offset"] == fields["slave_repl_offset"]
        assert fields["master_replid"] == replid
        assert fields["slave_read_only"] == "1"
        assert int(fields["master_last_io_seconds_ago"]) >= 0
        assert "master_link_down_since_seconds" not in fields
        assert r.call("GET", "replica-only") is None
        assert r.call("GET", "load:counter") == str(load.rounds).encode()


# ---- partial resynchronisation ------------------------------------------------------------------


def primary_link_lines(conn, *args) -> list:
    listing = conn.call("CLIENT", "LIST", *args).decode()
    return [line for line in listing.splitlines() if re.search(r" flags=\w*M\w* ", line)]


def test_partial_resync_after_the_link_is_killed(launch, tmp_path, kinds):
    """CLIENT KILL TYPE master drops the link; it comes back with PSYNC replid offset, the
    primary answers +CONTINUE (sync_partial_ok goes up, sync_full does not), and the writes
    made meanwhile arrive; the same when the primary kills it (CLIENT KILL TYPE replica)."""
    primary, replica = synced_pair(launch, tmp_path, bulk=20_000, kinds=kinds)
    # (the first PSYNC may have asked to continue the replica's own history: sync_partial_err)
    full, partial, refused = sync_stats(primary)
    assert (full, partial) == (1, 0)
    with replica.conn() as r:
        links = primary_link_lines(r)
        assert len(links) == 1, links
        assert f"addr=127.0.0.1:{primary.port} " in links[0], links
        assert primary_link_lines(r, "TYPE", "master") == links
        assert r.call("CLIENT", "KILL", "TYPE", "master") == 1
    pipe(primary.port, [("SET", f"meanwhile:{i}", i) for i in range(2000)]
         + [("DEL", "s:embstr"), ("HSET", "h:large", "f1", "changed"), ("LPOP", "l:large")])
    wait_in_sync(primary, replica)
    assert sync_stats(primary) == (1, 1, refused)
    assert_same_data(primary, replica)
    with replica.conn() as r:
        assert len(primary_link_lines(r)) == 1
        assert r.call("GET", "meanwhile:1999") == b"1999"
    with primary.conn() as p:
        assert p.call("CLIENT", "KILL", "TYPE", "replica") == 1
        assert p.call("SET", "after-second-kill", "yes") == OK
    wait_in_sync(primary, replica)
    assert sync_stats(primary) == (1, 2, refused)
    with replica.conn() as r:
        assert r.call("GET", "after-second-kill") == b"yes"


def test_a_replica_restarted_from_its_file_resumes_with_a_partial_resync(launch, tmp_path, kinds):
    """A replica saved at shutdown comes back from its file with the replication id, the offset
    and the database the stream had selected (RDB's repl-id, repl-offset, repl-stream-db), and
    continues with a partial resync, as Redis 7's does: the writes made while it was down arrive,
    in the database the stream had selected before (no SELECT is sent again)."""
    primary, replica = synced_pair(launch, tmp_path, kinds=kinds)
    with primary.conn() as p:
        assert p.call("SELECT", "3") == OK
        assert p.call("SET", "in-db3", "before") == OK
    wait_in_sync(primary, replica)
    full, partial, refused = sync_stats(primary)
    shutdown(replica, "SAVE")
    with primary.conn() as p:
        assert p.call("SELECT", "3") == OK
        assert p.call("SET", "while-down", "yes") == OK
    restarted = start_replica(launch, tmp_path, config={"replicaof": f"127.0.0.1 {primary.port}"},
                              kind=kinds[1])
    wait_in_sync(primary, restarted)
    assert sync_stats(primary) == (full, partial + 1, refused)
    with restarted.conn() as r:
        assert r.call("SELECT", "3") == OK
        assert r.call("MGET", "in-db3", "while-down") == [b"before", b"yes"]
    assert_same_data(primary, restarted)


def test_a_link_down_longer_than_the_backlog_resyncs_in_full(launch, tmp_path, kinds):
    """The replica follows a port where nothing listens for a while (it keeps the history it
    reached, to ask to continue it) while the primary writes more than its 16 kB backlog holds:
    when it follows the primary again, its PSYNC cannot be continued (sync_partial_err), a full
    resync replaces its data, and the keyspaces are equal."""
    primary, replica = synced_pair(launch, tmp_path, bulk=5000, kinds=kinds)
    with primary.conn() as p:
        assert p.call("CONFIG", "SET", "repl-backlog-size", "16384") == OK
    full, partial, refused = sync_stats(primary)
    with replica.conn() as r:
        assert r.call("REPLICAOF", "127.0.0.1", free_port()) == OK
    with primary.conn() as p:
        wait_for(lambda: replication(p)["connected_slaves"] == "0", 10, "the link to go")
        assert p.pipeline([("SET", f"while-down:{i}", "x" * 1000) for i in range(100)]) == [OK] * 100
        assert p.call("DEL", "bulk:1", "s:raw") == 2
    follow(replica, primary)
    wait_in_sync(primary, replica)
    assert sync_stats(primary) == (full + 1, partial, refused + 1)
    assert_same_data(primary, replica)


# ---- promotion and following again ------------------------------------------------------------


def test_replicaof_no_one_promotes_and_following_again_resyncs(launch, tmp_path):
    """REPLICAOF NO ONE keeps the data and takes writes (ROLE master); REPLICAOF/SLAVEOF of the
    primary followed already answers `+OK Already connected to specified master`, and only
    then; following the primary again replaces the data written as a primary."""
    primary, replica = synced_pair(launch, tmp_path, bulk=5000)
    with replica.conn() as r:
        assert r.call("REPLICAOF", "127.0.0.1", primary.port) == ALREADY
        assert r.call("SLAVEOF", "127.0.0.1", str(primary.port)) == ALREADY
        before = keyspace_snapshot(r)
        assert r.call("REPLICAOF", "NO", "ONE") == OK
        role = r.call("ROLE")
        assert role[0] == b"master" and role[2] == [], role
        assert replication(r)["role"] == "master"
        assert_same_keyspace(before, keyspace_snapshot(r))
        assert r.call("SET", "promoted", "yes") == OK
        assert r.call("DEL", "s:int") == 1
        assert r.call("REPLICAOF", "no", "one") == OK
    with primary.conn() as p:
        wait_for(lambda: replication(p)["connected_slaves"] == "0", 10, "the primary to see it go")
        assert p.call("SET", "after-promotion", "1") == OK
    with replica.conn() as r:
        assert r.call("GET", "after-promotion") is None
        assert r.call("SLAVEOF", "127.0.0.1", str(primary.port)) == OK
        assert r.call("REPLICAOF", "127.0.0.1", str(primary.port)) == ALREADY
    wait_in_sync(primary, replica)
    assert_same_data(primary, replica)
    with replica.conn() as r:
        assert r.call("GET", "promoted") is None
        assert r.call("GET", "after-promotion") == b"1"
        assert r.call("SET", "promoted", "again") == READONLY


# ---- what clients see on a replica -------------------------------------------------------------


def test_clients_writes_get_readonly_and_reads_are_served(launch, tmp_path):
    primary, replica = synced_pair(launch, tmp_path)
    with replica.conn() as r:
        for command in [("SET", "x", "1"), ("DEL", "s:embstr"), ("INCR", "s:int"),
                        ("LPUSH", "l:small", "z"), ("HSET", "h:small", "f", "w"),
                        ("EXPIRE", "s:raw", "10"), ("FLUSHALL",), ("FLUSHDB",),
                        ("SETEX", "y", "10", "v"), ("XADD", "x:single", "*", "a", "b")]:
            assert r.call(*command) == READONLY, command
        assert r.call("MULTI") == OK
        assert r.call("SET", "x", "1") == READONLY
        assert r.call("GET", "s:embstr") == Status("QUEUED")
        assert r.call("EXEC") == Err("EXECABORT Transaction discarded because of previous errors.")
        assert r.call("GET", "s:embstr") == b"hello world"
        assert r.call("LRANGE", "l:small", "0", "1") == [b"a", b"1"]
        assert r.call("HGET", "h:small", "f") == b"v"
        assert r.call("PING") == PONG
    assert_same_data(primary, replica)


def test_a_replica_never_expires_keys_itself(launch, tmp_path):
    """A key whose TTL passed reads as missing on the replica (GET, EXISTS, TTL) but stays in
    DBSIZE until the primary's DEL arrives (active expiry is off on the primary, so the DEL
    comes only when the primary itself looks the key up)."""
    primary, replica = synced_pair(launch, tmp_path)
    with primary.conn() as p:
        assert p.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == OK
        assert p.call("SET", "soon", "gone") == OK
        assert p.call("HSET", "soon:h", "f", "v") == 1
        assert p.call("PEXPIRE", "soon", "300") == 1
        assert p.call("PEXPIRE", "soon:h", "300") == 1
        size = p.call("DBSIZE")
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        wait_for(lambda: r.call("GET", "soon") is None, 10, "the TTL to pass on the replica")
        assert r.call("EXISTS", "soon", "soon:h") == 0
        assert r.call("TTL", "soon") == -2
        assert r.call("HGET", "soon:h", "f") is None
        assert r.call("TYPE", "soon:h") == Status("none")
        assert r.call("DBSIZE") == size  # still held: the primary has not deleted them
    with primary.conn() as p:
        assert p.call("DEBUG", "SLEEP", "0") == OK
        assert p.call("DBSIZE") == size
        assert p.call("GET", "soon") is None  # the primary expires it now, and sends DEL
        assert p.call("EXISTS", "soon:h") == 0
        assert p.call("DBSIZE") == size - 2
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        assert r.call("DBSIZE") == size - 2
    assert_same_data(primary, replica)


def test_a_replica_does_not_evict_over_maxmemory(launch, tmp_path):
    """maxmemory is the primary's to enforce: a replica holding more keeps every key, from the
    snapshot as from the stream."""
    primary = start_primary(launch, tmp_path)
    pipe(primary.port, [("SET", f"big:{i}", "x" * 500) for i in range(10_000)])
    replica = start_replica(launch, tmp_path, config={"maxmemory": "2mb",
                                                      "maxmemory-policy": "allkeys-lru"})
    follow(replica, primary)
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        assert r.call("DBSIZE") == 10_000, "keys dropped loading the primary's snapshot"
    pipe(primary.port, [("SET", f"more:{i}", "y" * 500) for i in range(2000)])
    wait_in_sync(primary, replica)
    with replica.conn() as r:
        assert r.call("DBSIZE") == 12_000
        assert info(r, "stats")["evicted_keys"] == "0"


def test_a_lost_primary_leaves_the_data_served(launch, tmp_path):
    """The primary goes away: the link is down (INFO, ROLE), the data stays readable and
    writes stay refused."""
    primary, replica = synced_pair(launch, tmp_path)
    with replica.conn() as r:
        before = keyspace_snapshot(r)
    primary.stop()
    with replica.conn() as r:
        wait_for(lambda: replication(r)["master_link_status"] == "down", 15, "the link to go down")
        fields = replication(r)
        assert fields["role"] == "slave"
        assert fields["master_sync_in_progress"] == "0"
        assert int(fields["master_link_down_since_seconds"]) >= 0
        role = r.call("ROLE")
        assert role[:3] == [b"slave", b"127.0.0.1", primary.port], role
        assert role[3] in (b"connect", b"connecting"), role
        assert_same_keyspace(before, keyspace_snapshot(r))
        assert r.call("SET", "x", "1") == READONLY
        assert r.call("PING") == PONG


# ---- authentication -------------------------------------------------------------------------


PASSWORD = "s3cret-primary"


def protected_primary(launch, tmp_path, user):
    """A filled primary that wants a password (the default user's, or `user`'s through ACL)."""
    primary = start_primary(launch, tmp_path)
    with primary.conn() as c:
        fill_every_type(c)
        if user is not None:
            assert c.call("ACL", "SETUSER", user, "on", f">{PASSWORD}", "~*", "&*", "+@all") == OK
            assert c.call("ACL", "SETUSER", "default", "off") == OK
        else:
            assert c.call("CONFIG", "SET", "requirepass", PASSWORD) == OK
    return primary


def auth_args(user):
    return (PASSWORD,) if user is None else (user, PASSWORD)


@pytest.mark.parametrize("user", [None, "replicator"])
def test_masterauth_and_masteruser(launch, tmp_path, user):
    """A primary with requirepass (or an ACL user): `masterauth` (and `masteruser`) at
    start-up let the replica sync."""
    primary = protected_primary(launch, tmp_path, user)
    config = {"masterauth": PASSWORD, **({"masteruser": user} if user else {})}
    replica = start_replica(launch, tmp_path, config=config)
    follow(replica, primary)
    wait_in_sync(primary, replica, auth=auth_args(user))
    with connect(primary, auth_args(user)) as p, replica.conn() as r:
        assert p.call("SET", "written-after", "sync") == OK
        wait_for(lambda: r.call("GET", "written-after") == b"sync", 15, "the write to arrive")
        assert_same_keyspace(keyspace_snapshot(p), keyspace_snapshot(r))


def test_wrong_masterauth_keeps_the_link_down_and_the_data_served(launch, tmp_path):
    """With a wrong password the primary refuses AUTH at every try (its ACL LOG counts them),
    the link stays down, and the replica keeps serving its own data; with the right one set
    (CONFIG SET masterauth) the next try syncs."""
    primary = protected_primary(launch, tmp_path, None)
    replica = start_replica(launch, tmp_path, config={"masterauth": "wrong"})
    with replica.conn() as r:
        assert r.call("SET", "own", "data") == OK
        assert r.call("RPUSH", "own:list", "a", "b") == 2
        before = keyspace_snapshot(r)
    follow(replica, primary)
    with primary.conn() as p:
        assert p.call("AUTH", PASSWORD) == OK

        def refused_twice():
            entries = p.call("ACL", "LOG")
            return entries and dict(zip(entries[0][::2], entries[0][1::2]))[b"count"] >= 2
        wait_for(refused_twice, 15, "two refused AUTHs")
        assert replication(p)["connected_slaves"] == "0"
    with replica.conn() as r:
        fields = replication(r)
        assert fields["role"] == "slave"
        assert fields["master_link_status"] == "down"
        assert fields["master_sync_in_progress"] == "0"
        assert "master_link_down_since_seconds" in fields
        assert_same_keyspace(before, keyspace_snapshot(r))
        assert r.call("PING") == PONG
        assert r.call("SET", "own", "other") == READONLY
        assert r.call("CONFIG", "SET", "masterauth", PASSWORD) == OK
    wait_in_sync(primary, replica, auth=PASSWORD)
    assert_same_data(primary, replica, auth=PASSWORD)


# ---- the replicaof directive -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["command line", "config file"])
def test_replicaof_directive_at_start_up(launch, tmp_path, where):
    """`--replicaof "host port"` on the command line, or `replicaof host port` in the config
    file: the server starts as a replica and syncs."""
    primary = start_primary(launch, tmp_path, diskless="no")
    with primary.conn() as c:
        fill_every_type(c)
    fill_bulk(primary.port, 10_000)
    folder = tmp_path / "replica"
    folder.mkdir()
    if where == "command line":
        replica = launch(folder, config={"replicaof": f"127.0.0.1 {primary.port}"})
    else:
        replica = launch(folder, config_text=f"dir {folder}\nsave \"\"\n"
                                             f"replicaof 127.0.0.1 {primary.port}\n")
    wait_in_sync(primary, replica)
    assert_same_data(primary, replica)
    with replica.conn() as r:
        assert r.call("ROLE")[:4] == [b"slave", b"127.0.0.1", primary.port, b"connected"]
        assert r.call("SET", "x", "1") == READONLY


def test_info_right_after_a_sync(launch, tmp_path):
    """Once synced the link has just heard from the primary: master_last_io_seconds_ago counts
    from then (Redis shows -1 only without a primary connection)."""
    primary, replica = synced_pair(launch, tmp_path)
    with replica.conn() as r:
        fields = replication(r)
        assert (fields["master_link_status"], fields["master_sync_in_progress"]) == ("up", "0")
        assert 0 <= int(fields["master_last_io_seconds_ago"]) <= 10, fields


# ---- a broken primary -----------------------------------------------------------------------


REPLID = "f" * 8 + "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def small_rdb(tmp_path_factory):
    """A valid RDB file with 2000 keys (strings and hashes), saved by redis-server."""
    srv = ServerProcess("redis")
    srv.start()
    try:
        pipe(srv.port, [("SET", f"rdb:{i}", f"value-{i}" * 4) for i in range(1000)]
             + [("HSET", f"rdb:h:{i}", "f", i, "g", "x" * 30) for i in range(1000)])
        with srv.conn() as c:
            assert c.call("SAVE") == OK
        return (srv.workdir / "dump.rdb").read_bytes()
    finally:
        srv.cleanup()


class FakePrimary:
    """A socket server playing a primary: it answers the handshake (PING, AUTH, REPLCONF), then
    on the first connection answers PSYNC with +FULLRESYNC and whatever `after_fullresync`
    sends, then hangs up if it returns "close", else waits for the replica to. Later
    connections get no answer to PSYNC (the replica waits in its handshake), so the data a test
    reads stays put. `connections` holds each connection's commands."""

    def __init__(self, after_fullresync):
        self.after_fullresync = after_fullresync
        self.port = free_port()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.connections = []
        self.sockets = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(sock)
            commands = []
            self.connections.append(commands)
            threading.Thread(target=self._serve, args=(sock, commands, len(self.connections) == 1),
                             daemon=True).start()

    @staticmethod
    def _commands(sock):
        """The commands the replica sends (arrays of bulk strings), one at a time."""
        buf = b""

        def line():
            nonlocal buf
            while b"\r\n" not in buf:
                data = sock.recv(65536)
                if not data:
                    raise ConnectionError
                buf += data
            text, buf = buf.split(b"\r\n", 1)
            return text
        while True:
            header = line()
            assert header.startswith(b"*"), header
            args = []
            for _ in range(int(header[1:])):
                size = int(line()[1:])
                while len(buf) < size + 2:
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionError
                    buf += data
                args.append(buf[:size])
                buf = buf[size + 2:]
            yield args

    def _serve(self, sock, commands, first):
        try:
            for args in self._commands(sock):
                commands.append(args)
                name = args[0].upper()
                if name == b"PING":
                    sock.sendall(b"+PONG\r\n")
                elif name == b"PSYNC":
                    if not first:
                        continue
                    sock.sendall(f"+FULLRESYNC {REPLID} 0\r\n".encode())
                    if self.after_fullresync(sock) == "close":
                        return
                    sock.settimeout(30)
                    while sock.recv(65536):
                        pass  # REPLCONF ACKs, until the replica hangs up
                    return
                elif name == b"REPLCONF" and args[1].upper() == b"ACK":
                    continue
                else:
                    sock.sendall(b"+OK\r\n")
        except (OSError, ConnectionError):
            pass
        finally:
            sock.close()

    def psyncs(self) -> list:
        return [args for commands in self.connections for args in commands
                if args[0].upper() == b"PSYNC"]

    def close(self):
        self.closed.set()
        self.listener.close()
        for sock in self.sockets:
            try:
                sock.close()
            except OSError:
                pass


def sized(payload):
    return b"$%d\r\n" % len(payload) + payload


def eof_framed(payload):
    mark = b"0123456789" * 4
    return b"$EOF:" + mark + b"\r\n" + payload + mark


GARBAGE = bytes(range(256)) * 8

STREAM = encode_command("SELECT", "0") + encode_command("SET", "from-the-stream", "applied")

BAD_PRIMARIES = {
    # the payload's header is not a payload header
    "garbage-header": lambda rdb: b"this is not a payload\r\n" + GARBAGE,
    # a well-framed payload that is not an RDB file
    "garbage-payload": lambda rdb: sized(b"NOTREDIS" + GARBAGE),
    # the connection closes half-way through the payload (see CLOSING)
    "closed-mid-sized-payload": lambda rdb: sized(rdb)[:len(rdb) // 2],
    "closed-mid-eof-payload": lambda rdb: eof_framed(rdb)[:len(rdb) // 2],
    # a good payload, then a command stream that is not RESP
    "garbage-stream": lambda rdb: sized(rdb) + STREAM + b"*abc\r\n" + GARBAGE,
}

CLOSING = {"closed-mid-sized-payload", "closed-mid-eof-payload"}

KEEL_LINK = r"Replication link with MASTER 127\.0\.0\.1:\d+: "

# What each server logs about it (keel's messages are its own).
BAD_PRIMARY_LOGS = {
    "redis": {
        "garbage-header": r"Bad protocol from MASTER, the first byte is not '\$'",
        "garbage-payload": r"Failed trying to load the MASTER synchronization DB from disk",
        "closed-mid-sized-payload": r"I/O error trying to sync with MASTER: connection lost",
        "closed-mid-eof-payload": r"I/O error trying to sync with MASTER: connection lost",
        "garbage-stream": r"Protocol error .* from client: .*flags=M",
    },
    "keel": {
        "garbage-header": KEEL_LINK + r"bad payload header",
        "garbage-payload": KEEL_LINK + r".*not an RDB file",
        "closed-mid-sized-payload": KEEL_LINK + r"the primary closed the connection",
        "closed-mid-eof-payload": KEEL_LINK + r"the primary closed the connection",
        "garbage-stream": KEEL_LINK + r"protocol error from the primary",
    },
}


def own_data(replica):
    """Data the replica holds before it follows anyone."""
    pipe(replica.port, [("SET", f"own:{i}", i) for i in range(100)]
         + [("RPUSH", "own:list", "a", "b")])
    with replica.conn() as r:
        return keyspace_snapshot(r)


def follow_fake(replica, fake, case, server_kind):
    with replica.conn() as r:
        assert r.call("REPLICAOF", "127.0.0.1", fake.port) == OK
    wait_for(lambda: len(fake.connections) >= 2 and fake.psyncs()[1:], 20,
             "the replica to try again")
    log = BAD_PRIMARY_LOGS[server_kind][case]
    wait_for(lambda: re.search(log, replica.output()), 10, f"the log line {log!r}")
    assert replica.proc.poll() is None, replica.output()[-3000:]


@pytest.mark.parametrize("case", list(BAD_PRIMARIES))
def test_a_bad_primary_is_logged_and_retried(launch, tmp_path, small_rdb, server_kind, case):
    """A primary that sends garbage for the payload, closes half-way through it, or sends a
    command stream that is not RESP: the replica logs why, tries again (a second connection
    with PSYNC) and keeps serving: its own data when no payload was loaded (never part of a
    payload), the payload and what the stream applied before the garbage otherwise."""
    def misbehave(sock):
        sock.sendall(BAD_PRIMARIES[case](small_rdb))
        return "close" if case in CLOSING else None
    fake = FakePrimary(misbehave)
    try:
        replica = start_replica(launch, tmp_path)
        before = own_data(replica)
        follow_fake(replica, fake, case, server_kind)
        with replica.conn() as r:
            assert r.call("PING") == PONG
            assert r.call("ROLE")[:3] == [b"slave", b"127.0.0.1", fake.port]
            if case == "garbage-stream":
                assert r.call("DBSIZE") == 2001
                assert r.call("GET", "rdb:999") == b"value-999" * 4
                assert r.call("HGET", "rdb:h:5", "f") == b"5"
                assert r.call("GET", "from-the-stream") == b"applied"
                # the retry starts over (Redis: a primary that broke the protocol is not
                # continued) or continues after what was applied
                continued = [b"PSYNC", REPLID.encode(), str(len(STREAM) + 1).encode()]
                assert fake.psyncs()[1] in ([b"PSYNC", b"?", b"-1"], continued), fake.psyncs()
            elif case == "garbage-payload":
                # Redis empties the data before it loads the (bad) file
                after = keyspace_snapshot(r)
                assert after == before or key_count(after) == 0, key_count(after)
            else:
                assert_same_keyspace(before, keyspace_snapshot(r))
            assert r.call("SET", "x", "1") == READONLY
    finally:
        fake.close()
    handshake = [args[0].upper() for args in fake.connections[0]]
    assert handshake == [b"PING", b"REPLCONF", b"REPLCONF", b"PSYNC"] + handshake[4:], handshake
    assert len(fake.connections[0][3]) == 3, fake.connections[0][3]


@pytest.mark.keel_differs(reason="redis-server exits when a payload that claims to be whole "
                                 "holds a cut RDB file; keel logs it and keeps serving, empty")
def test_a_cut_rdb_in_a_whole_payload_is_never_served_half_loaded(launch, tmp_path, small_rdb):
    """The framing says the payload is complete, but the RDB file in it stops half-way: none
    of its keys are served (the load fails as a whole), the replica keeps running and tries
    again."""
    fake = FakePrimary(lambda sock: sock.sendall(sized(small_rdb[:len(small_rdb) // 2])))
    try:
        replica = start_replica(launch, tmp_path)
        before = own_data(replica)
        with replica.conn() as r:
            assert r.call("REPLICAOF", "127.0.0.1", fake.port) == OK
        wait_for(lambda: len(fake.connections) >= 2 and fake.psyncs()[1:], 20,
                 "the replica to try again")
        assert replica.proc.poll() is None, replica.output()[-3000:]
        with replica.conn() as r:
            assert r.call("PING") == PONG
            after = keyspace_snapshot(r)
            assert after == before or key_count(after) == 0, key_count(after)
            assert r.call("GET", "rdb:0") is None
    finally:
        fake.close()


def test_getack_is_answered_at_once_with_the_offset_applied(launch, tmp_path, small_rdb):
    """After a good payload and a stream with a SELECT, each REPLCONF GETACK gets
    `REPLCONF ACK <offset>` at once (well before the next unasked one, a second apart), the
    offset counting every byte of the stream before the GETACK."""
    getack = encode_command("REPLCONF", "GETACK", "*")
    asked, acks = [], []  # when each GETACK was sent; (when, offset) of each ACK

    def stream_and_ask(sock):
        sock.sendall(sized(small_rdb) + STREAM)

        def read_acks():
            try:
                for args in FakePrimary._commands(sock):
                    if [a.upper() for a in args[:2]] == [b"REPLCONF", b"ACK"]:
                        acks.append((time.monotonic(), int(args[2])))
            except (OSError, ConnectionError):
                pass
        threading.Thread(target=read_acks, daemon=True).start()
        for _ in range(3):
            time.sleep(0.35)
            asked.append(time.monotonic())
            sock.sendall(getack)
        time.sleep(0.5)
        return "close"

    def answers():
        return [[offset for when, offset in acks if sent <= when < sent + 0.3][:1]
                for sent in asked]
    fake = FakePrimary(stream_and_ask)
    try:
        replica = start_replica(launch, tmp_path)
        with replica.conn() as r:
            assert r.call("REPLICAOF", "127.0.0.1", fake.port) == OK
            wait_for(lambda: r.call("GET", "from-the-stream") == b"applied", 20, "the stream")
            assert r.call("DBSIZE") == 2001
        wait_for(lambda: len(asked) == 3 and time.monotonic() > asked[-1] + 0.3, 10,
                 "three GETACKs")
    finally:
        fake.close()
    assert answers() == [[len(STREAM) + k * len(getack)] for k in range(3)], (asked, acks)


def test_the_old_data_is_served_while_the_payload_arrives(launch, tmp_path, small_rdb):
    """While the payload is on its way (half sent, the rest held back) the replica is in sync
    (INFO master_sync_in_progress:1, ROLE state `sync`) and serves its old data; once the rest
    arrives the payload replaces it and the stream after it applies."""
    payload = sized(small_rdb)
    resume = threading.Event()

    def send_in_two(sock):
        sock.sendall(payload[:len(payload) // 2])
        resume.wait(30)
        sock.sendall(payload[len(payload) // 2:] + STREAM)
    fake = FakePrimary(send_in_two)
    try:
        replica = start_replica(launch, tmp_path)
        before = own_data(replica)
        with replica.conn() as r:
            assert r.call("REPLICAOF", "127.0.0.1", fake.port) == OK
            wait_for(lambda: replication(r)["master_sync_in_progress"] == "1", 10, "the transfer")
            assert r.call("ROLE")[:4] == [b"slave", b"127.0.0.1", fake.port, b"sync"]
            assert replication(r)["master_link_status"] == "down"
            assert_same_keyspace(before, keyspace_snapshot(r))
            resume.set()
            wait_for(lambda: r.call("GET", "from-the-stream") == b"applied", 20, "the stream")
            assert r.call("DBSIZE") == 2001
            assert r.call("GET", "own:1") is None
            fields = replication(r)
            assert (fields["master_sync_in_progress"], fields["master_link_status"]) == ("0", "up")
            assert r.call("ROLE")[3:] == [b"connected", len(STREAM)]
    finally:
        resume.set()
        fake.close()

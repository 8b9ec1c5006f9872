"""Hostile clients: no request or client behaviour crashes keel, freezes it,
or pushes it past its memory bounds.

Each case is a request a hostile or careless client can send with
redis-cli. Where Redis's behaviour is the reference the test runs against
both servers; where Redis itself freezes, crashes or grows without bound
and keel deliberately does better, the test is marked `keel_differs`.
"""

import socket
import threading
from pathlib import Path

import pytest

from support import (OK, PONG, Err, RespConn, encode_command, info, pipeline_big_sets_concurrently,
                     wait_for)

DEBUG_NOT_ALLOWED = (
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")


def rss_bytes(srv) -> int:
    status = Path(f"/proc/{srv.proc.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def assert_closed(conn: RespConn):
    """The server closed `conn` without completing a reply on it."""
    assert conn.is_closed()


# -- one request that would allocate without limit -----------------------------------

HUGE_RANDOM_PICKS = [
    ("SADD", "SRANDMEMBER", ("s", "a"), ()),
    ("HSET", "HRANDFIELD", ("h", "f", "v"), ()),
    ("HSET", "HRANDFIELD", ("h", "f", "v"), ("WITHVALUES",)),
    ("ZADD", "ZRANDMEMBER", ("z", "1", "a"), ()),
    ("ZADD", "ZRANDMEMBER", ("z", "1", "a"), ("WITHSCORES",)),
]


@pytest.mark.keel_differs(reason="Redis builds the whole reply: it freezes and grows by GBs")
@pytest.mark.parametrize("create, command, key_and_value, options", HUGE_RANDOM_PICKS)
def test_a_reply_past_the_output_limit_closes_only_that_client(
        start_server, create, command, key_and_value, options):
    srv = start_server({"maxmemory": "64mb", "maxmemory-clients": "8mb"})
    rss_before = rss_bytes(srv)
    with srv.conn() as hostile, srv.conn() as bystander:
        hostile.call(create, *key_and_value)
        hostile.send(command, key_and_value[0], "-1000000000000", *options)
        assert_closed(hostile)
        assert bystander.call("PING") == PONG
        stats = info(bystander, "stats")
        assert int(stats["client_output_buffer_limit_disconnections"]) == 1
        wait_for(lambda: int(info(bystander, "clients")["connected_clients"]) == 1)
    # Nothing was built whole first: the reply stopped at the 8 MB limit.
    assert rss_bytes(srv) - rss_before < 64 << 20


def test_random_picks_with_repetition_within_the_limit_are_all_sent(c):
    c.call("SADD", "s", "a", "b")
    picks = c.call("SRANDMEMBER", "s", "-1000")
    assert len(picks) == 1000 and set(picks) <= {b"a", b"b"}
    c.call("HSET", "h", "f", "v")
    assert c.call("HRANDFIELD", "h", "-3", "WITHVALUES") == [b"f", b"v"] * 3
    c.call("ZADD", "z", "1", "m")
    assert c.call("ZRANDMEMBER", "z", "-2", "WITHSCORES") == [b"m", b"1"] * 2
    assert c.call("SRANDMEMBER", "nokey", "-5") == []


@pytest.mark.keel_differs(reason="Redis holds a reply of any size for a normal client by default")
def test_a_whole_list_reply_past_the_client_budget_closes_the_client(start_server):
    srv = start_server({"maxmemory-clients": "1mb"})
    with srv.conn() as hostile, srv.conn() as bystander:
        value = "x" * 1000
        for start in range(0, 3000, 500):
            hostile.call("RPUSH", "list", *[value] * 500)
        hostile.send("LRANGE", "list", "0", "-1")
        assert_closed(hostile)
        assert bystander.call("LLEN", "list") == 3000


def test_a_large_reply_within_the_budget_is_sent_whole_and_leaves_no_charge(start_server):
    srv = start_server({"maxmemory-clients": "16mb"})
    with srv.conn() as conn:
        value = "x" * 1000
        for _ in range(6):
            conn.call("RPUSH", "list", *[value] * 500)
        assert conn.call("LRANGE", "list", "0", "-1") == [value.encode()] * 3000
        if srv.kind == "keel":
            # The room granted while the 3 MB reply grew was given back.
            wait_for(lambda: int(info(conn, "memory")["mem_clients_normal"]) < 1 << 20)


# -- DEBUG ---------------------------------------------------------------------------

def test_debug_is_refused_by_default(start_server):
    srv = start_server({"enable-debug-command": "no"})
    with srv.conn() as conn:
        assert conn.call("DEBUG", "SLEEP", "0") == Err(DEBUG_NOT_ALLOWED)
        assert conn.call("CONFIG", "GET", "enable-debug-command") == [
            b"enable-debug-command", b"no"]


def test_debug_local_allows_loopback_clients(start_server):
    srv = start_server({"enable-debug-command": "local"})
    with srv.conn() as conn:
        assert conn.call("DEBUG", "SLEEP", "0") == OK


@pytest.mark.keel_differs(reason="Redis sleeps its only thread, so every client waits for ever")
@pytest.mark.parametrize("seconds", ["1e300", "inf"])
def test_debug_sleep_for_ever_stalls_only_its_connection(start_server, seconds):
    srv = start_server()
    with srv.conn() as sleeper, srv.conn() as other:
        sleeper.call("CLIENT", "SETNAME", "sleeper")
        sleeper.send("DEBUG", "SLEEP", seconds)
        wait_for(lambda: client_fields(other, "sleeper")["cmd"] == "debug")
        assert other.call("SET", "k", "v") == OK
        sleeper_id = client_fields(other, "sleeper")["id"]
        assert other.call("CLIENT", "KILL", "SKIPME", "yes", "ID", sleeper_id) == 1
        # Its reply waited with it, and is sent as it closes.
        assert sleeper.read_until_closed() == b"+OK\r\n"
        assert other.call("GET", "k") == b"v"


def client_fields(conn, name) -> dict:
    """The CLIENT LIST fields of the client called `name`."""
    for line in conn.call("CLIENT", "LIST").decode().splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        if fields["name"] == name:
            return fields
    raise AssertionError(f"no client named {name}")


@pytest.mark.keel_differs(reason="DEBUG PANIC crashes Redis; keel closes the calling connection")
def test_a_panic_in_a_command_costs_only_that_connection(start_server):
    srv = start_server({"threads": "2"})
    # Connections on every worker, which must all keep being served.
    bystanders = [srv.conn() for _ in range(8)]
    try:
        victim = RespConn(srv.port)
        victim.call("HELLO", "3")
        victim.call("CLIENT", "SETNAME", "victim")
        victim.call("WATCH", "watched")
        victim.call("SUBSCRIBE", "news")
        victim.send("DEBUG", "PANIC")
        assert_closed(victim)
        for conn in bystanders:
            assert conn.call("PING") == PONG
        observer = bystanders[0]
        # The client sees the close before the server's clean-up is done.
        wait_for(lambda: b"name=victim" not in observer.call("CLIENT", "LIST"))
        assert observer.call("PUBSUB", "NUMSUB", "news") == [b"news", 0]
        assert observer.call("PUBLISH", "news", "hello") == 0
        assert int(info(observer, "clients")["connected_clients"]) == len(bystanders)
        assert "panic in command 'DEBUG'" in srv.log_tail()
    finally:
        for conn in bystanders:
            conn.close()


# -- maxclients ----------------------------------------------------------------------

def test_maxclients_refuses_one_more_with_redis_error(start_server):
    srv = start_server({"maxclients": "4"})
    conns = [srv.conn()]
    try:
        # The start-up probe's connection may not be gone yet.
        wait_for(lambda: int(info(conns[0], "clients")["connected_clients"]) == 1)
        conns += [srv.conn() for _ in range(3)]
        for conn in conns:
            assert conn.call("PING") == PONG
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as extra:
            reply = b""
            while not reply.endswith(b"\r\n"):
                chunk = extra.recv(1024)
                if not chunk:
                    break
                reply += chunk
            assert reply == b"-ERR max number of clients reached\r\n"
        assert int(info(conns[0], "stats")["rejected_connections"]) == 1
        conns.pop().close()
        wait_for(lambda: int(info(conns[0], "clients")["connected_clients"]) == 3)
        with srv.conn() as again:
            assert again.call("PING") == PONG
    finally:
        for conn in conns:
            conn.close()


IDLE_CONNECTIONS = 10_000
WRITERS = 16
SETS_PER_WRITER = 20
BIG_VALUE = b"v" * 100_000


def test_idle_connections_never_stall_writers(start_server):
    """10,000 connections that never send anything, then writers pipelining
    100 KB SETs: every write completes. In keel, idle connections once held
    a read buffer each and filled the 64 MB client budget, and from then on
    every writer paused for good."""
    srv = start_server({"maxclients": str(IDLE_CONNECTIONS + WRITERS + 1)})
    idle = []
    try:
        for _ in range(IDLE_CONNECTIONS):
            idle.append(socket.create_connection(("127.0.0.1", srv.port), timeout=30))
        with srv.conn() as conn:
            # Every idle connection is registered before the writers start.
            assert int(info(conn, "clients")["connected_clients"]) == IDLE_CONNECTIONS + 1
        replies = pipeline_big_sets_concurrently(srv.port, WRITERS, SETS_PER_WRITER, BIG_VALUE,
                                                 timeout=50)
        assert all(replies.get(n) == b"+OK\r\n" * SETS_PER_WRITER for n in range(WRITERS))
        with srv.conn() as conn:
            assert conn.call("DBSIZE") == WRITERS * SETS_PER_WRITER
    finally:
        for s in idle:
            s.close()



# -- buffers filled on a client's behalf ---------------------------------------------

def test_a_subscriber_that_never_reads_is_disconnected_at_the_pubsub_limit(start_server):
    srv = start_server({"maxmemory": "128mb"})
    with socket.create_connection(("127.0.0.1", srv.port)) as stuck, srv.conn() as publisher:
        stuck.sendall(encode_command("SUBSCRIBE", "news"))
        wait_for(lambda: publisher.call("PUBSUB", "NUMSUB", "news") == [b"news", 1])
        message = b"m" * (1 << 20)
        received = [publisher.call("PUBLISH", "news", message) for _ in range(256)]
        # Redis's default pubsub hard limit is 32 MB; the kernel's socket
        # buffers take a few MB more before the backlog starts to grow.
        assert received[:32] == [1] * 32 and received[-1] == 0
        assert publisher.call("PUBSUB", "NUMSUB", "news") == [b"news", 0]
        assert publisher.call("PING") == PONG
    if srv.kind == "keel":
        with srv.conn() as conn:
            stats = info(conn, "stats")
            assert int(stats["client_output_buffer_limit_disconnections"]) == 1
            assert int(info(conn, "memory")["mem_clients_normal"]) < 1 << 20
        assert rss_bytes(srv) < (128 + 64 + 32) << 20


def send_until_closed(sock, data):
    """Sends `data`; a connection shut down meanwhile ends the send."""
    try:
        sock.sendall(data)
    except OSError:
        pass


@pytest.mark.keel_differs(reason="Redis's MULTI queue grows without bound, outside maxmemory")
def test_a_multi_queue_is_held_to_the_client_budget(start_server):
    budget = 8 << 20
    srv = start_server({"maxmemory-clients": str(budget)})
    queued = b"".join(encode_command("SET", f"key:{i}", "v" * 200) for i in range(100_000))
    with socket.create_connection(("127.0.0.1", srv.port)) as hostile, srv.conn() as bystander:
        hostile.sendall(encode_command("MULTI"))
        sender = threading.Thread(target=send_until_closed, args=(hostile, queued), daemon=True)
        sender.start()
        wait_for(lambda: int(info(bystander, "stats")["backpressure_paused_clients"]) >= 1)
        memory = info(bystander, "memory")
        # One read chunk and one request may pass the budget, no more.
        assert int(memory["mem_clients_normal"]) < budget + (1 << 20)
        assert bystander.call("SET", "other", "v") == OK
        assert bystander.call("DBSIZE") == 1, "nothing queued ran"
        # Also wakes the sender blocked in sendall, so the socket closes.
        hostile.shutdown(socket.SHUT_RDWR)
    # The paused connection notices, and its queue leaves the budget.
    with srv.conn() as conn:
        wait_for(lambda: int(info(conn, "memory")["mem_clients_normal"]) < 64 << 10)


# -- a write that grows more than its arguments ----------------------------------------

MAXMEMORY = 16 * 1024 * 1024
OOM = "OOM command not allowed when used memory > 'maxmemory'."
LESS_THAN_ITS_ARGUMENTS = "Redis reserves nothing for a write's growth and lets the dataset pass maxmemory"


def dataset_bytes(conn) -> int:
    return int(info(conn, "memory")["used_memory_dataset"])


def assert_within_maxmemory(conn):
    assert dataset_bytes(conn) <= MAXMEMORY


def fill_sets(conn, keys, bytes_each):
    """Disjoint sets of 100-byte members at `keys`, each holding about
    `bytes_each` of the dataset."""
    for n, key in enumerate(keys):
        target = dataset_bytes(conn) + bytes_each
        batch = 0
        while dataset_bytes(conn) < target:
            members = [f"{key}:{n}:{batch}:{i}".ljust(100, "m") for i in range(1000)]
            conn.call("SADD", key, *members)
            batch += 1


def setup_string(conn):
    conn.call("SET", "k", "hello")


def setup_big_string(conn):
    conn.call("SETRANGE", "k", "12000000", "x")


def setup_copy_source(conn):
    conn.call("SETRANGE", "src", "9000000", "x")


def setup_sets(conn):
    fill_sets(conn, ["s1", "s2"], 5 * 1024 * 1024)


def setup_full_dataset(conn):
    """Fills the dataset until not even a small write fits: with large
    values first, then smaller ones into the room they left."""
    conn.call("SET", "k", "hello")
    n = 0
    for size in (100_000, 1_000, 10):
        while conn.call("SET", f"fill:{n}", "v" * size) == OK:
            n += 1


# (setup, the write, a read that shows the write changed nothing)
GROWING_WRITES = [
    (setup_string, ("SETRANGE", "k", "500000000", "x"), ("GET", "k")),
    (setup_big_string, ("APPEND", "k", "y" * 3_000_000), ("STRLEN", "k")),
    (setup_copy_source, ("COPY", "src", "dst"), ("EXISTS", "dst")),
    (setup_sets, ("SUNIONSTORE", "u", "s1", "s2"), ("EXISTS", "u")),
    (setup_full_dataset, ("EXPIRE", "k", "100"), ("TTL", "k")),
    (setup_full_dataset, ("GETEX", "k", "EX", "100"), ("TTL", "k")),
]


@pytest.mark.keel_differs(reason=LESS_THAN_ITS_ARGUMENTS)
@pytest.mark.parametrize("setup, write, read", GROWING_WRITES,
                         ids=[w[1][0] for w in GROWING_WRITES])
def test_a_write_that_cannot_fit_gets_oom_and_changes_nothing(start_server, setup, write, read):
    srv = start_server({"maxmemory": str(MAXMEMORY), "maxmemory-policy": "noeviction"})
    with srv.conn() as conn:
        setup(conn)
        before, bytes_before = conn.call(*read), dataset_bytes(conn)
        assert conn.call(*write) == Err(OOM)
        assert conn.call(*read) == before
        assert dataset_bytes(conn) <= bytes_before


@pytest.mark.keel_differs(reason=LESS_THAN_ITS_ARGUMENTS)
def test_exec_refuses_each_queued_write_that_cannot_fit(start_server):
    srv = start_server({"maxmemory": str(MAXMEMORY), "maxmemory-policy": "noeviction"})
    with srv.conn() as conn:
        assert conn.call("MULTI") == OK
        for key in "abc":
            conn.call("SETRANGE", key, "5000000", "x")
        assert conn.call("EXEC") == [5000001, 5000001, Err(OOM)]
        assert conn.call("EXISTS", "c") == 0
        assert_within_maxmemory(conn)


def setup_keys_to_evict(conn):
    """10 MB of keys with a TTL: under volatile-lru they are what may be
    evicted, so the write's own keys stay."""
    value = "v" * 100_000
    for n in range(100):
        conn.call("SET", f"fill:{n}", value, "EX", "1000")


@pytest.mark.keel_differs(reason=LESS_THAN_ITS_ARGUMENTS)
@pytest.mark.parametrize("write, read, expected", [
    (("SETRANGE", "k", "8000000", "x"), ("STRLEN", "k"), 8000001),
    (("COPY", "src", "dst"), ("STRLEN", "dst"), 4000001),
    (("SUNIONSTORE", "u", "s1", "s2"), ("EXISTS", "u"), 1),
], ids=["SETRANGE", "COPY", "SUNIONSTORE"])
def test_a_growing_write_evicts_to_fit(start_server, write, read, expected):
    srv = start_server({"maxmemory": str(MAXMEMORY), "maxmemory-policy": "volatile-lru"})
    with srv.conn() as conn:
        if write[0] == "COPY":
            conn.call("SETRANGE", "src", "4000000", "x")
        if write[0] == "SUNIONSTORE":
            fill_sets(conn, ["s1", "s2"], 2 * 1024 * 1024)
        setup_keys_to_evict(conn)
        assert conn.call(*write) != Err(OOM)
        assert conn.call(*read) == expected
        assert int(info(conn, "stats")["evicted_keys"]) > 0
        assert_within_maxmemory(conn)


@pytest.mark.keel_differs(reason=LESS_THAN_ITS_ARGUMENTS)
def test_a_write_larger_than_maxmemory_evicts_nothing(start_server):
    srv = start_server({"maxmemory": str(MAXMEMORY)})
    with srv.conn() as conn:
        setup_keys_to_evict(conn)
        keys = conn.call("DBSIZE")
        assert conn.call("SETRANGE", "k", "500000000", "x") == Err(OOM)
        assert conn.call("DBSIZE") == keys
        assert int(info(conn, "stats")["evicted_keys"]) == 0


@pytest.mark.keel_differs(reason=LESS_THAN_ITS_ARGUMENTS)
def test_exec_makes_room_for_its_queue_before_it_runs(start_server):
    srv = start_server({"maxmemory": str(MAXMEMORY), "maxmemory-policy": "volatile-lru"})
    big = "x" * 3_000_000
    with srv.conn() as conn:
        setup_keys_to_evict(conn)
        assert conn.call("MULTI") == OK
        for key in "ab":
            conn.call("SET", key, big)
        assert conn.call("EXEC") == [OK, OK]
        assert conn.call("STRLEN", "a") == conn.call("STRLEN", "b") == len(big)
        assert_within_maxmemory(conn)


@pytest.mark.keel_differs(reason="Redis counts a blocked client's argv in its own memory, with no budget")
def test_a_blocked_commands_arguments_are_charged_while_it_waits(start_server):
    srv = start_server()
    key = "k" * (4 << 20)
    with srv.conn() as blocked, srv.conn() as observer:
        before = int(info(observer, "memory")["mem_clients_normal"])
        blocked.send("BLPOP", key, "0")
        wait_for(lambda: int(info(observer, "clients")["blocked_clients"]) == 1)
        assert int(info(observer, "memory")["mem_clients_normal"]) >= before + len(key)
        observer.call("RPUSH", key, "v")
        assert blocked.read() == [key.encode(), b"v"]
        wait_for(lambda: int(info(observer, "memory")["mem_clients_normal"]) < before + (1 << 20))


@pytest.mark.keel_differs(reason="Redis 7.0 checks only the bytes not yet parsed against the limit")
def test_arguments_already_decoded_count_towards_the_query_buffer_limit(start_server):
    srv = start_server({"client-query-buffer-limit": "1mb"})
    with srv.conn() as hostile, srv.conn() as bystander:
        # Two 600 KB arguments of a request never finished: neither alone
        # passes the limit, both together do.
        hostile.send_raw(b"*3\r\n$3\r\nSET\r\n$600000\r\n" + b"a" * 600_000 + b"\r\n$600000\r\n"
                         + b"b" * 300_000)
        hostile.send_raw(b"b" * 300_000)
        assert hostile.is_closed()
        assert bystander.call("PING") == PONG

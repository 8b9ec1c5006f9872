"""Many clients at once: counters stay exact and multi-key writes are atomic."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from support import OK, info_dict

CLIENTS = 200


def run_clients(server, count, work):
    """Run work(conn, index, barrier) on `count` threads, each with its own
    connection, all released together; returns the results in index order."""
    conns = [server.conn() for _ in range(count)]
    barrier = threading.Barrier(count, timeout=60)
    try:
        with ThreadPoolExecutor(max_workers=count) as pool:
            futures = [pool.submit(work, conns[i], i, barrier) for i in range(count)]
            return [f.result(timeout=300) for f in futures]
    finally:
        for conn in conns:
            conn.close()


def test_concurrent_incr_is_exact(server, c):
    keys = ["counter:a", "counter:b", "counter:c", "counter:d"]
    rounds, batch = 25, 10

    def work(conn, index, barrier):
        barrier.wait()
        for r in range(rounds):
            commands = []
            for j in range(batch):
                key = keys[(index + r + j) % len(keys)]
                commands.append(("INCR", key) if j % 2 else ("INCRBY", key, "2"))
            replies = conn.pipeline(commands)
            assert all(isinstance(x, int) for x in replies), replies

    run_clients(server, CLIENTS, work)
    per_key = {k: 0 for k in keys}
    for index in range(CLIENTS):
        for r in range(rounds):
            for j in range(batch):
                per_key[keys[(index + r + j) % len(keys)]] += 1 if j % 2 else 2
    assert c.pipeline([("GET", k) for k in keys]) == [str(per_key[k]).encode() for k in keys]


def test_many_connections_are_counted(server, c):
    def work(conn, index, barrier):
        conn.call("PING")
        barrier.wait()
        clients = info_dict(conn.call("INFO", "clients"))["connected_clients"] if index == 0 else None
        barrier.wait()  # nobody disconnects before client 0 has looked
        return clients

    assert int(run_clients(server, CLIENTS, work)[0]) >= CLIENTS


def test_mset_is_atomic_for_concurrent_readers(server, c):
    keys = [f"atomic:{i}" for i in range(10)]
    c.call("MSET", *[x for k in keys for x in (k, "init")])
    writers, readers, iterations = 4, 16, 300

    def work(conn, index, barrier):
        barrier.wait()
        torn = []
        for n in range(iterations):
            if index < writers:
                value = f"w{index}-{n}"
                assert conn.call("MSET", *[x for k in keys for x in (k, value)]) == OK
            else:
                values = conn.call("MGET", *keys)
                if len(set(values)) != 1:
                    torn.append(values)
        return torn

    results = run_clients(server, writers + readers, work)
    torn = [t for result in results for t in result]
    assert torn == [], f"MGET saw a partial MSET: {torn[:3]}"


def test_msetnx_has_one_winner(server, c):
    def work(conn, index, barrier):
        barrier.wait()
        return conn.call("MSETNX", "lock:a", f"owner-{index}", "lock:b", f"owner-{index}")

    results = run_clients(server, 50, work)
    assert sorted(results) == [0] * 49 + [1]
    winner = results.index(1)
    assert c.call("MGET", "lock:a", "lock:b") == [f"owner-{winner}".encode()] * 2


@pytest.mark.parametrize("cmd", ["SETNX", "SET_NX"])
def test_setnx_has_one_winner(server, c, cmd):
    def work(conn, index, barrier):
        barrier.wait()
        if cmd == "SETNX":
            return conn.call("SETNX", "single", str(index)) == 1
        return conn.call("SET", "single", str(index), "NX") == OK

    results = run_clients(server, CLIENTS, work)
    assert results.count(True) == 1
    assert c.call("GET", "single") == str(results.index(True)).encode()


def test_getdel_hands_each_value_to_one_client(server, c):
    c.call("MSET", *[x for i in range(500) for x in (f"job:{i}", str(i))])

    def work(conn, index, barrier):
        barrier.wait()
        return [v for v in conn.pipeline([("GETDEL", f"job:{i}") for i in range(500)]) if v]

    taken = [v for result in run_clients(server, 20, work) for v in result]
    assert sorted(taken, key=int) == [str(i).encode() for i in range(500)]
    assert c.call("DBSIZE") == 0


def test_moves_swaps_and_sorts_across_databases_keep_every_key(server, c):
    """MOVE and SWAPDB (which hold shards of two databases), SORT with BY and
    GET patterns (which holds every shard of one) and MSET, from many clients
    at once: nothing deadlocks, and every key is in exactly one database."""
    keys = [f"m{i}" for i in range(40)]
    c.call("MSET", *[x for k in keys for x in (k, k[1:])])
    c.call("RPUSH", "src", *[k[1:] for k in keys])
    rounds = 30

    def work(conn, index, barrier):
        barrier.wait()
        for r in range(rounds):
            key = keys[(index * 7 + r) % len(keys)]
            kind = index % 4
            if kind == 0:
                conn.pipeline([("SELECT", str(r % 2)), ("MOVE", key, str(1 - r % 2)),
                               ("SELECT", "0")])
            elif kind == 1:
                assert conn.call("SWAPDB", "0", "1") == OK
            elif kind == 2:
                reply = conn.call("SORT", "src", "BY", "m*", "GET", "#", "GET", "m*",
                                  "STORE", f"sorted{index}")
                assert isinstance(reply, int), reply
            else:
                conn.call("MSET", f"other{index}", "7", f"more{index}", "x")

    run_clients(server, 40, work)
    placed = [c.pipeline([("SELECT", str(db))] + [("EXISTS", k) for k in keys])[1:]
              for db in (0, 1)]
    c.call("SELECT", "0")
    assert [a + b for a, b in zip(*placed)] == [1] * len(keys)

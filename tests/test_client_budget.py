"""maxmemory-clients: keel's client buffer budget and backpressure.

Redis 7 enforces maxmemory-clients by disconnecting the clients using the
most memory; keel instead stops reading from connections while the budget
is full, so their backlog waits in the sockets, and never evicts a key or
drops a client for it. Hence these tests are keel's alone.
"""

import threading

import pytest

from support import info, pipeline_big_sets

KEEL_BACKPRESSURE = pytest.mark.keel_differs(
    reason="Redis 7 disconnects clients over maxmemory-clients; keel pauses reading from them")

CONNECTIONS = 30
REQUESTS = 8
VALUE = b"v" * 400_000


@KEEL_BACKPRESSURE
def test_backpressure_pauses_then_serves_every_request_in_order(start_server):
    srv = start_server({"maxmemory": "2gb", "maxmemory-clients": "1mb"})
    results = {}

    def send(n):
        results[n] = pipeline_big_sets(srv.port, f"c{n}", REQUESTS, VALUE)

    workers = [threading.Thread(target=send, args=(n,)) for n in range(CONNECTIONS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert all(results[n] == b"+OK\r\n" * REQUESTS for n in range(CONNECTIONS))
    with srv.conn() as conn:
        assert conn.call("DBSIZE") == CONNECTIONS * REQUESTS
        stats = info(conn, "stats")
        assert int(stats["backpressure_events"]) > 0, "the budget was too small not to pause"
        assert int(stats["backpressure_paused_clients"]) == 0, "every paused connection resumed"
        assert int(stats["evicted_keys"]) == 0
        assert int(stats["evicted_clients"]) == 0
        assert int(info(conn, "memory")["maxmemory_clients"]) == 1024 * 1024


@KEEL_BACKPRESSURE
def test_maxmemory_clients_accepts_bytes_or_a_share_of_maxmemory(start_server):
    srv = start_server({"maxmemory": "100mb", "maxmemory-clients": "10%"})
    with srv.conn() as conn:
        assert int(info(conn, "memory")["maxmemory_clients"]) == 100 * 1024 * 1024 // 100 * 10
        conn.call("CONFIG", "SET", "maxmemory-clients", "32mb")
        assert int(info(conn, "memory")["maxmemory_clients"]) == 32 * 1024 * 1024

"""Light connections are served while heavy ones pipeline large writes.

keel makes the batches of connections that move more than a read chunk at a
time take turns in a heavy lane on their worker (`connection.rs`), so a new
or light connection does not wait behind all of them. Whatever the order in
which connections are served, every reply must still arrive, in order.
"""

import threading

import pytest

from support import OK, PONG, RespConn, encode_command, info

HEAVY_CONNECTIONS = 48
APPENDS = 12
VALUE_BYTES = 64 * 1024


def appends_out_of_order(port, n, all_connected) -> int:
    """On a new connection, pipelines APPENDS appends of a large value to a
    key of its own, sending from a thread while reading; returns how many
    replies were not the length the key has after that append, in order.
    Sends once every heavy connection is open (`all_connected`, a barrier),
    so that their batches reach the worker together, more than its heavy
    lane has turns for."""
    with RespConn(port, timeout=60) as conn:
        all_connected.wait(timeout=60)
        key = f"heavy:{n}"
        value = b"v" * VALUE_BYTES
        sender = threading.Thread(target=conn.send_raw,
                                  args=(encode_command("APPEND", key, value) * APPENDS,))
        sender.start()
        replies = [conn.read() for _ in range(APPENDS)]
        sender.join()
        return sum(reply != VALUE_BYTES * (i + 1) for i, reply in enumerate(replies))


def heavy_load_with_fresh_pings(port):
    """Runs HEAVY_CONNECTIONS pipelining connections and, until they are
    done, PINGs from one fresh connection after another; returns the heavy
    connections' out-of-order counts and how many PINGs were answered while
    the load was still running."""
    out_of_order = {}
    all_connected = threading.Barrier(HEAVY_CONNECTIONS)

    def heavy(n):
        out_of_order[n] = appends_out_of_order(port, n, all_connected)

    threads = [threading.Thread(target=heavy, args=(n,)) for n in range(HEAVY_CONNECTIONS)]
    for t in threads:
        t.start()
    pongs_during_load = 0
    while any(t.is_alive() for t in threads):
        with RespConn(port) as fresh:
            assert fresh.call("PING") == PONG
        pongs_during_load += 1
    for t in threads:
        t.join()
    return out_of_order, pongs_during_load


def test_fresh_connections_are_answered_and_heavy_replies_stay_in_order(start_server):
    srv = start_server({"threads": 1})
    out_of_order, pongs_during_load = heavy_load_with_fresh_pings(srv.port)
    assert pongs_during_load > 0
    assert out_of_order == {n: 0 for n in range(HEAVY_CONNECTIONS)}


@pytest.mark.keel_differs(reason="the heavy lane and INFO heavy_lane_waits are keel's")
def test_only_heavy_connections_wait_for_the_heavy_lane(start_server):
    srv = start_server({"threads": 1})
    with srv.conn() as observer:
        light = [srv.conn() for _ in range(HEAVY_CONNECTIONS)]
        for round_ in range(5):
            for n, conn in enumerate(light):
                key = f"light:{n}"
                assert conn.pipeline([("SET", key, round_), ("GET", key)] * 20) == \
                    [OK, str(round_).encode()] * 20
        for conn in light:
            conn.close()
        assert int(info(observer, "stats")["heavy_lane_waits"]) == 0

        out_of_order, _ = heavy_load_with_fresh_pings(srv.port)
        assert out_of_order == {n: 0 for n in range(HEAVY_CONNECTIONS)}
        assert int(info(observer, "stats")["heavy_lane_waits"]) > 0

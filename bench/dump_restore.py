"""DUMP and RESTORE of large values, keel vs redis-server: the time each
takes and the payload size, per type.

    python bench/dump_restore.py KEEL_PORT REDIS_PORT [N]

Both servers must be running and empty of the keys `bench:*`. Each value
has N elements (default 200,000), filled in batches; the timings are the
best of three, measured from the client (one connection, loopback).
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support import OK, RespConn  # noqa: E402

BATCH = 1000


def fill(conn, kind, n):
    rng = random.Random(1)
    key = f"bench:{kind}"
    conn.call("DEL", key)
    if kind == "string-text":
        conn.call("SET", key, ("lorem ipsum dolor sit amet " * (n // 2))[: n * 10])
    elif kind == "string-random":
        conn.call("SET", key, bytes(rng.randrange(256) for _ in range(n * 10)))
    for start in range(0, n, BATCH):
        items = range(start, min(n, start + BATCH))
        if kind == "list":
            conn.call("RPUSH", key, *[f"element:{i}" for i in items])
        elif kind == "set":
            conn.call("SADD", key, *[f"member:{i}" for i in items])
        elif kind == "hash":
            conn.call("HSET", key, *[x for i in items for x in (f"field:{i}", f"value:{i}")])
        elif kind == "zset":
            conn.call("ZADD", key, *[x for i in items for x in (str(rng.random()), f"member:{i}")])
    return key


def best(f, runs=3):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def main():
    keel_port, redis_port = int(sys.argv[1]), int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
    print(f"| value ({n:,} elements or {n * 10:,} bytes) | server | DUMP ms | payload bytes | RESTORE ms |")
    print("|---|---|---:|---:|---:|")
    for kind in ["string-text", "string-random", "list", "set", "hash", "zset"]:
        for name, port in [("keel", keel_port), ("redis", redis_port)]:
            conn = RespConn(port, timeout=120)
            key = fill(conn, kind, n)
            payload = conn.call("DUMP", key)
            dump_ms = best(lambda: conn.call("DUMP", key))
            restore_ms = best(lambda: conn.call("RESTORE", "bench:copy", "0", payload, "REPLACE") == OK)
            assert conn.call("RESTORE", "bench:copy", "0", payload, "REPLACE") == OK
            conn.call("DEL", key, "bench:copy")
            print(f"| {kind} | {name} | {dump_ms:.1f} | {len(payload):,} | {restore_ms:.1f} |")
            conn.close()


if __name__ == "__main__":
    main()

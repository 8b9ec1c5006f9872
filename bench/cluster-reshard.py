#!/usr/bin/env python3
"""Reshard under load, keel beside redis-server (issue 22's acceptance).

usage: .venv/bin/python bench/cluster-reshard.py KEEL_BIN [PRELOAD_KEYS] [RATE] [OUT]

For each server kind: three primaries on free ports, formed into a cluster
(`redis-cli --cluster create` for redis-server, `keel-cluster create` for
keel), PRELOAD_KEYS keys written (default 100,000), then a writer sets new
keys at RATE requests/s (default 2,000) through redis-py's RedisCluster
while a third of the slots (5,461) move from the first primary to the second
(`redis-cli --cluster reshard` for redis-server, `keel-cluster reshard` for
keel). Afterwards every key written (preloaded and acknowledged during the
move) is read back. Prints, and writes to OUT (a Markdown file) if given:
the time the move took, the writer's latency (p50, p99, p99.9, worst) during
the move, the errors the writer saw, and keys lost.

keel-bench has no cluster mode, so the fixed-rate writer is redis-py's
cluster client: its latencies include Python's overhead, the same for both
servers. The machine has 2 shared cores; compare the servers, not absolutes.
"""

import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support import ServerProcess, free_port, wait_for  # noqa: E402

from redis.cluster import ClusterNode, RedisCluster  # noqa: E402

MOVED_SLOTS = 5461


def start_nodes(kind, keel_bin):
    nodes = []
    for _ in range(3):
        directives = {"cluster-enabled": "yes", "maxmemory": "0", "save": ""}
        if kind == "redis":
            # The bus port, which must be free too (Redis's default, port + 10000, may not be).
            directives["cluster-port"] = str(free_port())
        server = ServerProcess(kind, keel_bin, directives=directives)
        nodes.append(server.start())
    return nodes


def form(kind, keel_bin, nodes):
    addresses = [f"127.0.0.1:{n.port}" for n in nodes]
    if kind == "redis":
        subprocess.run(["redis-cli", "--cluster", "create", *addresses, "--cluster-yes"],
                       check=True, capture_output=True)
    else:
        subprocess.run([str(keel_bin.parent / "keel-cluster"), "create", *addresses],
                       check=True, capture_output=True)

    def settled():
        for n in nodes:
            with n.conn() as c:
                text = c.call("CLUSTER", "INFO")
                text = text.decode() if isinstance(text, bytes) else str(text)
                if "cluster_state:ok" not in text:
                    return False
                if len(c.call("CLUSTER", "SLOTS")) != 3:
                    return False
        return True
    wait_for(settled, timeout=60, what="cluster formed")


def node_id(node):
    with node.conn() as c:
        return c.call("CLUSTER", "MYID").decode()


def reshard(kind, keel_bin, nodes, source, target):
    entry = f"127.0.0.1:{nodes[0].port}"
    if kind == "redis":
        command = ["redis-cli", "--cluster", "reshard", entry, "--cluster-from", source,
                   "--cluster-to", target, "--cluster-slots", str(MOVED_SLOTS), "--cluster-yes"]
    else:
        command = [str(keel_bin.parent / "keel-cluster"), "reshard", entry, "--from", source,
                   "--to", target, "--slots", str(MOVED_SLOTS)]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


def run(kind, keel_bin, preload, rate):
    nodes = start_nodes(kind, keel_bin)
    try:
        form(kind, keel_bin, nodes)
        client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", nodes[0].port)])
        pipe = client.pipeline()
        for i in range(preload):
            pipe.set(f"pre:{i}", i)
            if i % 5000 == 4999:
                pipe.execute()
        pipe.execute()
        source, target = node_id(nodes[0]), node_id(nodes[1])
        acknowledged, latencies, errors = [], [], []
        stop = threading.Event()

        def writer():
            writer_client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", nodes[0].port)])
            interval, next_at, i = 1.0 / rate, time.perf_counter(), 0
            while not stop.is_set():
                now = time.perf_counter()
                if now < next_at:
                    time.sleep(next_at - now)
                next_at += interval
                key = f"live:{i}"
                sent = time.perf_counter()
                try:
                    writer_client.set(key, i)
                    latencies.append((time.perf_counter() - sent) * 1000)
                    acknowledged.append((key, i))
                except Exception as e:  # noqa: BLE001 — every error the client saw is counted
                    errors.append(f"{type(e).__name__}: {e}")
                i += 1
        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(1)
        before = len(latencies)
        took = reshard(kind, keel_bin, nodes, source, target)
        during = latencies[before:len(latencies)]
        stop.set()
        thread.join()
        wait_for(lambda: True, timeout=1)
        lost = 0
        reader = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", nodes[2].port)])
        expected = [(f"pre:{i}", i) for i in range(preload)] + acknowledged
        for start in range(0, len(expected), 5000):
            chunk = expected[start:start + 5000]
            values = reader.mget_nonatomic([k for k, _ in chunk])
            lost += sum(1 for (_, v), got in zip(chunk, values) if got != str(v).encode())
        return {
            "kind": kind, "move_s": took, "writes_during": len(during),
            "p50": statistics.median(during) if during else 0.0,
            "p99": percentile(during, 0.99), "p999": percentile(during, 0.999),
            "worst": max(during) if during else 0.0,
            "errors": len(errors), "error_kinds": sorted(set(e.split(":")[0] for e in errors)),
            "acknowledged": len(acknowledged), "lost": lost,
        }
    finally:
        for n in nodes:
            n.cleanup()


def main():
    from pathlib import Path
    keel_bin = Path(sys.argv[1]).resolve()
    preload = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rate = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    out = sys.argv[4] if len(sys.argv) > 4 else None
    if shutil.which("redis-cli") is None:
        sys.exit("redis-cli not found")
    rows = [run(kind, keel_bin, preload, rate) for kind in ("redis", "keel")]
    lines = [
        f"Preloaded {preload} keys; writer at {rate} SET/s; {MOVED_SLOTS} slots moved from the first primary to the second.",
        "",
        "| server | move took | writes during the move | p50 ms | p99 ms | p99.9 ms | worst ms | errors seen | acknowledged writes | keys lost |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['move_s']:.1f} s | {r['writes_during']} | {r['p50']:.2f} | {r['p99']:.2f} | "
            f"{r['p999']:.2f} | {r['worst']:.1f} | {r['errors']} {' '.join(r['error_kinds'])} | "
            f"{r['acknowledged']} | {r['lost']} |")
    text = "\n".join(lines)
    print(text)
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

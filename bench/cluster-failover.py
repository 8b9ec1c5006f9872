#!/usr/bin/env python3
"""Node loss, keel beside redis-server (issue 22's acceptance).

usage: .venv/bin/python bench/cluster-failover.py KEEL_BIN [PRELOAD_KEYS] [RATE] [OUT]

For each server kind: three primaries with a replica each, PRELOAD_KEYS keys
(default 20,000), a writer at RATE SET/s (default 1,000) through redis-py's
RedisCluster; then one primary is killed with SIGKILL. redis-server's
replica takes over by itself once `cluster-node-timeout` (2,000 ms here)
passes; for keel, `keel-cluster failover` is run at once (no node decides a
failover by itself). Records how long the writer saw errors (from the kill to
its last error), how many requests failed, and how many acknowledged writes
do not read back afterwards (replication is asynchronous in both: a write
acknowledged by the primary just before it died may not have reached its
replica).
"""

import subprocess
import time

from cluster_lib import Writer, bench_main, client, form, lost_keys, start_nodes, wait_for


def roles(node):
    """(primary ids with their replica ids) from `node`'s CLUSTER NODES."""
    with node.conn() as c:
        text = c.call("CLUSTER", "NODES")
    text = text.decode() if isinstance(text, bytes) else str(text)
    lines = [line.split() for line in text.splitlines() if line.strip()]
    replicas = {}
    for words in lines:
        if "slave" in words[2]:
            replicas[words[3]] = words[0]
    return replicas


def run(kind, keel_bin, preload, rate):
    nodes = start_nodes(kind, keel_bin, 6, {"cluster-node-timeout": "2000"})
    try:
        form(kind, keel_bin, nodes, replicas=1)
        ids = {}
        for n in nodes:
            with n.conn() as c:
                ids[c.call("CLUSTER", "MYID").decode()] = n
        wait_for(lambda: len(roles(nodes[0])) == 3, timeout=30, what="replicas known")
        victim_id, replica_id = next(iter(roles(nodes[0]).items()))
        victim = ids[victim_id]
        survivor = next(n for n in nodes if n is not victim)
        loader = client(survivor).pipeline()
        for i in range(preload):
            loader.set(f"pre:{i}", i)
        loader.execute()
        time.sleep(1)  # replicas catch up on the preload
        writer = Writer(survivor, rate).start()
        time.sleep(2)
        killed_at = time.perf_counter()
        victim.kill()
        if kind == "keel":
            subprocess.run([str(keel_bin.parent / "keel-cluster"), "failover",
                            f"127.0.0.1:{survivor.port}", replica_id], check=True, capture_output=True)
        else:
            def promoted():
                with survivor.conn() as c:
                    text = c.call("CLUSTER", "NODES")
                text = text.decode() if isinstance(text, bytes) else str(text)
                line = next(line for line in text.splitlines() if line.startswith(replica_id))
                return "master" in line.split()[2]
            wait_for(promoted, timeout=60, what="redis failover")
        time.sleep(3)
        writer.stop()
        after = [(sent, e) for sent, e in writer.errors if sent >= killed_at]
        window = (after[-1][0] - killed_at) if after else 0.0
        return {"kind": kind, "window_s": window, "failed": len(after),
                "acknowledged": len(writer.latencies),
                "lost": lost_keys(client(survivor), preload, writer.acknowledged)}
    finally:
        for n in nodes:
            n.cleanup()


def table(rows, preload, rate):
    by = {"redis": "the replica itself, after cluster-node-timeout 2000 ms",
          "keel": "`keel-cluster failover`, run at once"}
    return [
        f"Three primaries with a replica each; {preload} keys preloaded; writer at {rate} SET/s; "
        "one primary killed with SIGKILL.",
        "",
        "| server | failover by | errors seen for | failed requests | acknowledged writes | not read back |",
        "|---|---|---|---|---|---|",
    ] + [f"| {r['kind']} | {by[r['kind']]} | {r['window_s']:.2f} s | {r['failed']} | "
         f"{r['acknowledged']} | {r['lost']} |" for r in rows]


if __name__ == "__main__":
    bench_main(run, 20_000, 1000, table)

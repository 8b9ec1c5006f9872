#!/usr/bin/env python3
"""Reshard under load, keel beside redis-server (issue 22's acceptance).

usage: .venv/bin/python bench/cluster-reshard.py KEEL_BIN [PRELOAD_KEYS] [RATE] [OUT]

For each server kind: three primaries on free ports, formed into a cluster
(`redis-cli --cluster create` for redis-server, `keel-cluster create` for
keel), PRELOAD_KEYS keys written (default 100,000), then a writer sets new
keys and overwrites preloaded ones at RATE requests/s (default 2,000, half
each) through redis-py's RedisCluster
while a third of the slots (5,461) move from the first primary to the second
(`redis-cli --cluster reshard` for redis-server, `keel-cluster reshard` for
keel). Afterwards every key written (preloaded and acknowledged during the
move) is read back with its last acknowledged value. Prints, and appends to OUT (a Markdown file) if given:
the time the move took, the writer's latency (p50, p99, p99.9, worst) during
the move, the errors the writer saw, and keys lost.

keel-bench has no cluster mode, so the fixed-rate writer is redis-py's
cluster client: its latencies include Python's overhead, the same for both
servers. The machine has 2 shared cores; compare the servers, not absolutes.
"""

import statistics
import subprocess
import time

from cluster_lib import Writer, bench_main, client, form, lost_keys, node_id, percentile, start_nodes

MOVED_SLOTS = 5461


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
    return started, time.perf_counter()


def run(kind, keel_bin, preload, rate):
    nodes = start_nodes(kind, keel_bin, 3)
    try:
        form(kind, keel_bin, nodes)
        loader = client(nodes[0]).pipeline()
        for i in range(preload):
            loader.set(f"pre:{i}", i)
            if i % 5000 == 4999:
                loader.execute()
        loader.execute()
        writer = Writer(nodes[0], rate, overwrite=preload).start()
        time.sleep(1)
        started, ended = reshard(kind, keel_bin, nodes, node_id(nodes[0]), node_id(nodes[1]))
        writer.stop()
        during = [ms for sent, ms in writer.latencies if started <= sent <= ended]
        return {
            "kind": kind, "move_s": ended - started, "writes_during": len(during),
            "p50": statistics.median(during) if during else 0.0,
            "p99": percentile(during, 0.99), "p999": percentile(during, 0.999),
            "worst": max(during) if during else 0.0,
            "errors": len(writer.errors),
            "error_kinds": sorted({e.split(":")[0] for _, e in writer.errors}),
            "acknowledged": len(writer.latencies), "lost": lost_keys(client(nodes[2]), preload, writer.acknowledged),
        }
    finally:
        for n in nodes:
            n.cleanup()


def table(rows, preload, rate):
    return [
        f"Preloaded {preload} keys; writer at {rate} SET/s; {MOVED_SLOTS} slots moved from the first "
        "primary to the second.",
        "",
        "| server | move took | writes during the move | p50 ms | p99 ms | p99.9 ms | worst ms | errors seen "
        "| acknowledged writes | keys lost |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ] + [f"| {r['kind']} | {r['move_s']:.1f} s | {r['writes_during']} | {r['p50']:.2f} | {r['p99']:.2f} | "
         f"{r['p999']:.2f} | {r['worst']:.1f} | {r['errors']} {' '.join(r['error_kinds'])} | "
         f"{r['acknowledged']} | {r['lost']} |" for r in rows]


if __name__ == "__main__":
    bench_main(run, 100_000, 2000, table)

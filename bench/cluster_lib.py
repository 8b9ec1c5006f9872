"""What the cluster benchmarks share: clusters of keel-server or redis-server
nodes on free ports, formed with each one's own tool, and a writer that sets
new keys at a fixed rate through redis-py's RedisCluster, recording each
request's latency, each error, and each acknowledged write."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support import ServerProcess, free_port, wait_for  # noqa: E402,F401

from redis.cluster import ClusterNode, RedisCluster  # noqa: E402


def start_nodes(kind, keel_bin, count, extra=None):
    """`count` cluster-enabled nodes of `kind`, started."""
    nodes = []
    for _ in range(count):
        directives = {"cluster-enabled": "yes", "maxmemory": "0", "save": "",
                      "repl-diskless-sync-delay": "0", **(extra or {})}
        if kind == "redis":
            # The bus port must be free too (Redis's default, port + 10000, may not be).
            directives["cluster-port"] = str(free_port())
        nodes.append(ServerProcess(kind, keel_bin, directives=directives).start())
    return nodes


def form(kind, keel_bin, nodes, replicas=0):
    """Forms a cluster of `nodes` with redis-cli or keel-cluster and waits
    until every node serves it."""
    addresses = [f"127.0.0.1:{n.port}" for n in nodes]
    if kind == "redis":
        command = ["redis-cli", "--cluster", "create", *addresses,
                   "--cluster-replicas", str(replicas), "--cluster-yes"]
    else:
        command = [str(keel_bin.parent / "keel-cluster"), "create", *addresses,
                   "--replicas", str(replicas)]
    subprocess.run(command, check=True, capture_output=True)
    primaries = len(nodes) // (replicas + 1)

    def settled():
        for n in nodes:
            with n.conn() as c:
                text = c.call("CLUSTER", "INFO")
                text = text.decode() if isinstance(text, bytes) else str(text)
                if "cluster_state:ok" not in text or len(c.call("CLUSTER", "SLOTS")) != primaries:
                    return False
        return True
    wait_for(settled, timeout=60, what="cluster formed")

    def replicas_linked():
        for n in nodes:
            with n.conn() as c:
                text = c.call("INFO", "replication")
                text = text.decode() if isinstance(text, bytes) else str(text)
                if "role:slave" in text and "master_link_status:up" not in text:
                    return False
        return True
    # A replica that never synchronised would refuse to take over.
    wait_for(replicas_linked, timeout=60, what="replicas linked to their primaries")


def node_id(node):
    with node.conn() as c:
        return c.call("CLUSTER", "MYID").decode()


def client(node):
    return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", node.port)])


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


class Writer:
    """Writes at `rate` per second on a thread of its own until stopped: SET
    of a new key `live:N`, and, when `overwrite` > 0, every other request a
    SET of an existing key `pre:M` (M below `overwrite`) to a new value, so
    that keys being moved are written too. Records (time sent, latency ms)
    of each acknowledged write, the last value acknowledged for each key,
    and (time, error) of each failure."""

    def __init__(self, entry_node, rate, overwrite=0):
        self.entry, self.rate, self.overwrite = entry_node, rate, overwrite
        self.latencies, self.errors = [], []
        self.acknowledged = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _run(self):
        writer = client(self.entry)
        interval, next_at, i = 1.0 / self.rate, time.perf_counter(), 0
        while not self._stop.is_set():
            now = time.perf_counter()
            if now < next_at:
                time.sleep(next_at - now)
            next_at += interval
            if self.overwrite and i % 2:
                key = f"pre:{(i * 7919) % self.overwrite}"
            else:
                key = f"live:{i}"
            sent = time.perf_counter()
            try:
                writer.set(key, i)
                self.latencies.append((sent, (time.perf_counter() - sent) * 1000))
                self.acknowledged[key] = i
            except Exception as e:  # noqa: BLE001 — every error the client saw is counted
                self.errors.append((sent, f"{type(e).__name__}: {e}"))
            i += 1


def lost_keys(reader, preload, acknowledged):
    """How many of the `preload` keys `pre:N` (value N unless overwritten)
    and of the `acknowledged` writes do not read back with their last
    acknowledged value."""
    expected = {f"pre:{i}": i for i in range(preload)}
    expected.update(acknowledged)
    expected = list(expected.items())
    lost = 0
    for start in range(0, len(expected), 5000):
        chunk = expected[start:start + 5000]
        values = reader.mget_nonatomic([k for k, _ in chunk])
        lost += sum(1 for (_, v), got in zip(chunk, values) if got != str(v).encode())
    return lost


def bench_main(run, preload_default, rate_default, table):
    """The command line of the cluster benchmarks, KEEL_BIN [PRELOAD_KEYS]
    [RATE] [OUT]: runs `run(kind, keel_bin, preload, rate)` for redis-server,
    then keel, and prints the Markdown lines `table(rows, preload, rate)`
    gives, appending them to OUT if given."""
    keel_bin = Path(sys.argv[1]).resolve()
    preload = int(sys.argv[2]) if len(sys.argv) > 2 else preload_default
    rate = int(sys.argv[3]) if len(sys.argv) > 3 else rate_default
    out = sys.argv[4] if len(sys.argv) > 4 else None
    rows = [run(kind, keel_bin, preload, rate) for kind in ("redis", "keel")]
    text = "\n".join(table(rows, preload, rate))
    print(text)
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")
